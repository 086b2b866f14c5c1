/**
 * The Slack adapter through the real daemon: `gatehouse serve` as a child process, the loopback
 * Slack stand-in (Web API over HTTP + the Socket Mode WebSocket) and the demo model in this process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { mention, said, useSlackDaemon } from './slack-fixture.js';

const KIM = { id: 'U0KIM', name: 'kim' };
const ANN = { id: 'U0ANN', name: 'ann', display_name: 'Ann' };
const BOB = { id: 'U0BOB', name: 'bob', display_name: 'Bob' };
const EVE = { id: 'U0EVE', name: 'eve' };

const sl = useSlackDaemon({
  slackYaml: [`    allowed_user_ids: [${KIM.id}, ${ANN.id}, ${BOB.id}]`],
});

describe('Slack through the real daemon', { timeout: 90_000 }, () => {
  it('answers a DM once, acknowledges every envelope, and shows in gatehouse status', async () => {
    const { standIn } = sl;
    for (const user of [KIM, ANN, BOB, EVE]) standIn.user(user);
    standIn.conversation({ id: 'D0KIM', kind: 'im' });
    standIn.conversation({ id: 'C0GENERAL', kind: 'channel', name: 'general', topic: 'all things' });
    await sl.start();
    expect(await sl.ask('D0KIM', KIM, 'hello slack')).toBe(said('hello slack'));
    expect(await sl.ask('D0KIM', KIM, 'second')).toBe(said('second'));
    expect(sl.posts('D0KIM')).toEqual([said('hello slack'), said('second')]);
    // A DM's reply is not put in a thread of its own.
    expect(standIn.posted('D0KIM').every((c) => c.body.thread_ts === undefined)).toBe(true);
    const firsts = standIn.deliveries.filter((d) => d.retry_attempt === 0).map((d) => d.envelope_id);
    for (const id of firsts) await standIn.waitForAck(id);

    const json = await runCli(sl.home, ['status', '--json']);
    expect((JSON.parse(json.stdout) as { adapters: unknown[] }).adapters).toEqual([
      { platform: 'slack', state: 'running', detail: null, account: '@gatehouse', mode: 'socket' },
    ]);
    expect((await runCli(sl.home, ['status'])).stdout).toContain('slack: socket as @gatehouse');
  });

  it('KEY-1 in a channel: only mentions are answered (once, though Slack sends message and app_mention), each user in a session of their own', async () => {
    const { standIn } = sl;
    standIn.say('C0GENERAL', ANN, 'not for the bot');
    expect(await sl.ask('C0GENERAL', ANN, mention('alpha-secret from ann'))).toBe(
      said('alpha-secret from ann'),
    );
    expect(await sl.ask('C0GENERAL', BOB, mention('beta from bob'))).toBe(said('beta from bob'));
    expect(sl.userMessages('beta from bob')).toEqual(['beta from bob']);
    expect(await sl.ask('C0GENERAL', ANN, mention('gamma from ann'))).toBe(said('gamma from ann'));
    expect(sl.userMessages('gamma from ann')).toEqual(['alpha-secret from ann', 'gamma from ann']);
    expect(sl.posts('C0GENERAL').filter((t) => t.includes('alpha-secret'))).toHaveLength(1);
    expect(sl.asked('alpha-secret from ann')).toBe(1);
    expect(sl.posts('C0GENERAL').some((t) => t.includes('not for the bot'))).toBe(false);
    // The channel's name (a conversations.info lookup) is in the agent's context.
    const system = (sl.model.requests.at(-1)?.body?.messages ?? []).find((m) => m.role === 'system');
    expect(String(system?.content)).toContain('general');
  });

  it('KEY-1 KEY-3 a thread is one session shared by its members, each message prefixed with its sender, answered in the thread', async () => {
    const { standIn } = sl;
    const parent = standIn.say('C0GENERAL', ANN, 'a plan, no mention');
    expect(await sl.ask('C0GENERAL', ANN, mention('thread from ann'), parent)).toBe(said('thread from ann'));
    expect(await sl.ask('C0GENERAL', BOB, mention('thread from bob'), parent)).toBe(said('thread from bob'));
    expect(sl.userMessages('thread from bob')).toEqual(['[Ann] thread from ann', '[Bob] thread from bob']);
    const replies = standIn.posted('C0GENERAL').slice(-2);
    expect(replies.map((c) => c.body.thread_ts)).toEqual([parent, parent]);
  });

  it("splits an answer longer than Slack's 4,000 characters", async () => {
    const long = 'word '.repeat(1000).trim();
    await sl.ask('D0KIM', KIM, long);
    await sl.waitForPost('D0KIM', /word$/);
    const pieces = sl.posts('D0KIM').slice(-2);
    expect(pieces.every((p) => p.length <= 4000)).toBe(true);
    expect(pieces.join(' ').replace(/\s+/g, ' ')).toContain(long.slice(-100));
  });

  it('QUE-1 a message said during a turn runs after it; /stop as a slash command interrupts the next', async () => {
    const { standIn, model } = sl;
    const seen = model.requests.length;
    model.hold();
    standIn.say('D0KIM', KIM, 'first of two');
    await model.waitForRequests(seen + 1);
    standIn.say('D0KIM', KIM, 'second of two');
    model.release();
    await sl.waitForPost('D0KIM', /second of two/);
    expect(sl.posts('D0KIM').slice(-2)).toEqual([said('first of two'), said('second of two')]);
    expect(sl.userMessages('second of two').slice(-2)).toEqual(['first of two', 'second of two']);

    model.hold();
    const asked = model.requests.length;
    standIn.say('D0KIM', KIM, 'stop me');
    await model.waitForRequests(asked + 1);
    const command = standIn.command('D0KIM', KIM, '/gatehouse', 'stop');
    await sl.waitForPost('D0KIM', /^Stopped\.$/);
    // The acknowledgement carries the command back, shown only to the one who typed it.
    expect((await standIn.waitForAck(command)).payload).toEqual({ text: '`/stop`' });
    model.release();
    expect(await sl.ask('D0KIM', KIM, 'after stop')).toBe(said('after stop'));
    expect(sl.posts('D0KIM').some((t) => t.includes('stop me'))).toBe(false);
  });

  it('chat commands: a slash command of their own name, a typed command after a mention, and /help', async () => {
    const { standIn } = sl;
    standIn.command('D0KIM', KIM, '/queue', 'queued by slash');
    await sl.waitForPost('D0KIM', /queued by slash$/);
    standIn.command('C0GENERAL', BOB, '/gatehouse', 'help');
    const help = await sl.waitForPost('C0GENERAL', /^Commands:/);
    expect(String(help.body.text)).toContain('/stop');
    standIn.say('C0GENERAL', BOB, mention('/new'));
    await sl.waitForPost('C0GENERAL', /^Started a new conversation/);
    expect(await sl.ask('C0GENERAL', BOB, mention('after new'))).toBe(said('after new'));
    expect(sl.userMessages('after new')).toEqual(['after new']);
    // A stranger's slash command is refused where only they see it, and reaches no session.
    const before = sl.model.requests.length;
    const refused = standIn.command('D0KIM', EVE, '/gatehouse', 'queue from a stranger');
    expect((await standIn.waitForAck(refused)).payload).toEqual({
      text: 'You are not allowed to do this here.',
    });
    expect(sl.model.requests.length).toBe(before);
  });

  it('an approval is Block Kit buttons bound to its prompt: refused to a stranger, answered by its user, then replaced by the outcome', async () => {
    const { standIn } = sl;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-slack-'));
    const victim = path.join(dir, 'victim');
    fs.writeFileSync(victim, 'x');
    standIn.say('C0GENERAL', ANN, mention(`run: rm -rf ${victim}`));
    const asked = await sl.waitForPost('C0GENERAL', /^Approval needed/);
    const actions = (
      asked.body.blocks as { type: string; elements?: { action_id: string; text: { text: string } }[] }[]
    ).find((b) => b.type === 'actions')!;
    expect(actions.elements!.map((b) => b.text.text)).toEqual([
      'Approve once',
      'Approve for session',
      'Always approve',
      'Deny',
    ]);
    const once = actions.elements![0]!.action_id;
    expect(once).toMatch(/^gh:once:\d+:/);

    // Not on the allow-list: told so where only they see it, and nothing reaches the gateway.
    standIn.click('C0GENERAL', EVE, asked.ts!, once);
    const ephemeral = await standIn.waitForCall((c) => c.method === 'chat.postEphemeral');
    expect(ephemeral.body).toMatchObject({
      channel: 'C0GENERAL',
      user: EVE.id,
      text: 'You are not allowed to do this here.',
    });
    // Bob may talk to the bot, but this approval is Ann's session's, not his.
    standIn.click('C0GENERAL', BOB, asked.ts!, once);
    await sl.waitForPost('C0GENERAL', /^That approval is no longer open\.$/);
    expect(fs.existsSync(victim)).toBe(true);

    standIn.click('C0GENERAL', ANN, asked.ts!, once);
    const updated = await standIn.waitForCall((c) => c.method === 'chat.update' && c.body.ts === asked.ts);
    expect(String(updated.body.text)).toMatch(/Answered: approved once\.$/);
    const blocks = updated.body.blocks as { type: string }[];
    expect(blocks.map((b) => b.type)).toEqual(['section', 'context']);
    await sl.waitForPost('C0GENERAL', /returned/);
    expect(fs.existsSync(victim)).toBe(false);
    expect(sl.posts('C0GENERAL')).toContain(`⚙ terminal: \`rm -rf ${victim}\``);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('waits out a 429 for the Retry-After Slack gives', async () => {
    const { standIn } = sl;
    standIn.rateLimit('chat.postMessage', 1, 1);
    const before = performance.now();
    expect(await sl.ask('D0KIM', KIM, 'rate limited')).toBe(said('rate limited'));
    const limited = standIn.limited.find((l) => l.method === 'chat.postMessage')!;
    expect(limited.at).toBeGreaterThan(before);
    const sent = standIn.posted('D0KIM').at(-1)!;
    expect(sent.at - limited.at).toBeGreaterThanOrEqual(950);
    expect(sl.posts('D0KIM').filter((t) => t === said('rate limited'))).toHaveLength(1);
  });

  it('a disconnect (refresh_requested) opens a new connection: what was said meanwhile is delivered then, once', async () => {
    const { standIn } = sl;
    const opened = standIn.connectionsOpened();
    standIn.requestRefresh();
    // Said while the app has no socket: Slack keeps the envelope for the next connection.
    await standIn.waitForDisconnected();
    standIn.say('D0KIM', KIM, 'while refreshing');
    await standIn.waitForConnections(opened + 1);
    await sl.waitForPost('D0KIM', /while refreshing/);
    expect(sl.posts('D0KIM').filter((t) => t.includes('while refreshing'))).toHaveLength(1);
    expect(await sl.ask('D0KIM', KIM, 'after refresh')).toBe(said('after refresh'));
  });
});
