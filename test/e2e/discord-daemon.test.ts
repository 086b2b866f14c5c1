/**
 * The Discord adapter through the real daemon: `gatehouse serve` as a child process, the loopback
 * Discord stand-in (REST + gateway WebSocket) and the demo model in this process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';
import { APPLICATION_ID, BOT_ID } from '../fixtures/discord-standin.js';
import { runCli } from './cli.js';
import { GUILD, mention, useDiscordDaemon } from './discord-fixture.js';

const KIM = { id: '301', username: 'kim' };
const ANN = { id: '302', username: 'ann', global_name: 'Ann' };
const BOB = { id: '303', username: 'bob', global_name: 'Bob' };
const EVE = { id: '304', username: 'eve' };

const dc = useDiscordDaemon({
  discordYaml: [`    allowed_user_ids: ['${KIM.id}', '${ANN.id}', '${BOB.id}']`],
});
const said = (text: string) => `${DEMO_LABEL}: you said: ${text}`;

describe('Discord through the real daemon', { timeout: 90_000 }, () => {
  it('answers a DM once, typing while a long turn runs, registers the slash commands and shows in gatehouse status', async () => {
    dc.standIn.channel({ id: '500', type: 1 });
    await dc.start();
    // The model holds the turn: once it has run a second, "typing…" is shown (the daemon's delay).
    dc.model.hold();
    const id = dc.standIn.say('500', KIM, 'hello discord');
    await dc.standIn.waitForCall((c) => c.method === 'POST' && c.path === '/channels/500/typing');
    dc.model.release();
    const reply = await dc.waitForPost('500', /hello discord/);
    expect(reply.body.content).toBe(said('hello discord'));
    expect(reply.body.message_reference).toEqual({ message_id: id, fail_if_not_exists: false });
    expect(await dc.ask('500', KIM, 'second')).toBe(said('second'));
    expect(dc.posts('500').filter((t) => t.includes('hello discord'))).toHaveLength(1);
    // A live DM is known to be one without asking: the channel is never looked up.
    expect(dc.standIn.calls.some((c) => c.method === 'GET' && c.path === '/channels/500')).toBe(false);

    const commands = await dc.standIn.waitForCall((c) => c.method === 'PUT');
    expect(commands.path).toBe(`/applications/${APPLICATION_ID}/commands`);
    expect((commands.body as unknown as { name: string }[]).map((c) => c.name).sort()).toEqual([
      'approve',
      'budget',
      'compress',
      'cost',
      'deny',
      'help',
      'new',
      'queue',
      'reset',
      'retry',
      'status',
      'stop',
      'undo',
    ]);

    const json = await runCli(dc.home, ['status', '--json']);
    expect((JSON.parse(json.stdout) as { adapters: unknown[] }).adapters).toEqual([
      { platform: 'discord', state: 'running', detail: null, account: '@gatehouse', mode: 'gateway' },
    ]);
    expect((await runCli(dc.home, ['status'])).stdout).toContain('discord: gateway as @gatehouse');
  });

  it('KEY-1 in a guild channel: only mentions are answered, and each user has a session of their own', async () => {
    dc.standIn.channel({ id: '901', type: 0, name: 'general', guild_id: GUILD });
    dc.standIn.say('901', ANN, 'not for the bot');
    expect(await dc.ask('901', ANN, mention('alpha-secret from ann'))).toBe(said('alpha-secret from ann'));
    expect(await dc.ask('901', BOB, mention('beta from bob'))).toBe(said('beta from bob'));
    expect(dc.userMessages('beta from bob')).toEqual(['beta from bob']);
    expect(await dc.ask('901', ANN, mention('gamma from ann'))).toBe(said('gamma from ann'));
    expect(dc.userMessages('gamma from ann')).toEqual(['alpha-secret from ann', 'gamma from ann']);
    expect(dc.posts('901').some((t) => t.includes('not for the bot'))).toBe(false);
  });

  it('KEY-1 KEY-3 a thread is one session shared by its members, each message prefixed with its sender', async () => {
    dc.standIn.channel({ id: '902', type: 11, name: 'plans', guild_id: GUILD, parent_id: '901' });
    expect(await dc.ask('902', ANN, mention('thread from ann'))).toBe(said('thread from ann'));
    expect(await dc.ask('902', BOB, mention('thread from bob'))).toBe(said('thread from bob'));
    expect(dc.userMessages('thread from bob')).toEqual(['[Ann] thread from ann', '[Bob] thread from bob']);
  });

  it('splits an answer longer than 2,000 characters', async () => {
    const long = 'word '.repeat(600).trim();
    await dc.ask('500', KIM, long);
    const pieces = dc.posts('500').slice(-2);
    expect(pieces.every((p) => p.length <= 2000)).toBe(true);
    expect(pieces.join(' ').replace(/\s+/g, ' ')).toContain(long.slice(-100));
  });

  it('QUE-1 a message said during a turn runs after it; /stop as a slash command interrupts the next', async () => {
    const { standIn, model } = dc;
    const seen = model.requests.length;
    model.hold();
    standIn.say('500', KIM, 'first of two');
    await model.waitForRequests(seen + 1);
    standIn.say('500', KIM, 'second of two');
    model.release();
    await dc.waitForPost('500', /second of two/);
    expect(dc.posts('500').slice(-2)).toEqual([said('first of two'), said('second of two')]);
    expect(dc.userMessages('second of two').slice(-2)).toEqual(['first of two', 'second of two']);

    model.hold();
    const asked = model.requests.length;
    standIn.say('500', KIM, 'stop me');
    await model.waitForRequests(asked + 1);
    const interaction = standIn.interact('500', KIM, { type: 2, name: 'stop' });
    await dc.waitForPost('500', /^Stopped\.$/);
    const ack = await standIn.waitForCall((c) => c.path.startsWith(`/interactions/${interaction}/`));
    expect(ack.body).toEqual({ type: 4, data: { content: '`/stop`' } });
    model.release();
    expect(await dc.ask('500', KIM, 'after stop')).toBe(said('after stop'));
    expect(dc.posts('500').some((t) => t.includes('stop me'))).toBe(false);
  });

  it('an approval is buttons bound to its prompt: refused to a stranger, answered by its user, then disabled', async () => {
    const { standIn } = dc;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-discord-'));
    const victim = path.join(dir, 'victim');
    fs.writeFileSync(victim, 'x');
    standIn.say('901', ANN, mention(`run: rm -rf ${victim}`));
    const asked = await dc.waitForPost('901', /^Approval needed/);
    const row = (
      asked.body.components as { components: { custom_id: string; label: string; disabled: boolean }[] }[]
    )[0]!;
    expect(row.components.map((b) => b.label)).toEqual([
      'Approve once',
      'Approve for session',
      'Always approve',
      'Deny',
    ]);
    const once = row.components[0]!.custom_id;

    // Not on the allow-list: told so where only they see it, and nothing reaches the gateway.
    const refused = standIn.interact('901', EVE, { type: 3, custom_id: once });
    const refusal = await standIn.waitForCall((c) => c.path.startsWith(`/interactions/${refused}/`));
    expect(refusal.body).toEqual({
      type: 4,
      data: { content: 'You are not allowed to do this here.', flags: 64 },
    });
    // Bob may talk to the bot, but this approval is Ann's session's, not his.
    standIn.interact('901', BOB, { type: 3, custom_id: once });
    await dc.waitForPost('901', /^That approval is no longer open\.$/);
    expect(fs.existsSync(victim)).toBe(true);

    const click = standIn.interact('901', ANN, { type: 3, custom_id: once });
    const edited = await standIn.waitForCall(
      (c) => c.method === 'PATCH' && c.path.startsWith('/channels/901/messages/'),
    );
    expect(String(edited.body.content)).toMatch(/Answered: approved once\.$/);
    const disabled = (edited.body.components as { components: { disabled: boolean }[] }[])[0]!.components;
    expect(disabled.every((b) => b.disabled)).toBe(true);
    const deferred = await standIn.waitForCall((c) => c.path.startsWith(`/interactions/${click}/`));
    expect(deferred.body).toEqual({ type: 6 });
    await dc.waitForPost('901', /returned/);
    expect(fs.existsSync(victim)).toBe(false);
    expect(dc.posts('901')).toContain(`⚙ terminal: \`rm -rf ${victim}\``);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('waits out a 429 for the retry-after Discord gives', async () => {
    const { standIn } = dc;
    standIn.rateLimit('POST', /^\/channels\/500\/messages$/, 1, 1);
    const before = performance.now();
    expect(await dc.ask('500', KIM, 'rate limited')).toBe(said('rate limited'));
    const limited = standIn.limited.find((l) => l.path === '/channels/500/messages')!;
    expect(limited.at).toBeGreaterThan(before);
    const sent = dc.standIn.posted('500').at(-1)!;
    expect(sent.at - limited.at).toBeGreaterThanOrEqual(950);
  });

  it('a gateway reconnect (op 7) resumes, an invalid session (op 9) identifies anew: nothing said is lost', async () => {
    const { standIn } = dc;
    const resumes = standIn.received.filter((r) => r.op === 6).length;
    const identifies = standIn.received.filter((r) => r.op === 2).length;
    standIn.requestReconnect();
    await standIn.waitForOp(6, resumes + 1);
    expect(await dc.ask('500', KIM, 'after resume')).toBe(said('after resume'));
    standIn.invalidateSession();
    // Said while the bot has no session: no gateway will ever dispatch it; the catch-up reads it.
    standIn.say('500', KIM, 'while invalid');
    await standIn.waitForOp(2, identifies + 1);
    await dc.waitForPost('500', /while invalid/);
    expect(dc.posts('500').filter((t) => t.includes('while invalid'))).toHaveLength(1);
    expect(BOT_ID).not.toBe(KIM.id);
  });
});
