/**
 * `/budget` on the chat platforms (docs/cost.md, "Budgets", issue 29) and chat users mapped to
 * principals (docs/identity.md, "Chat platforms", issue 30), through the real daemon and each
 * platform's stand-in: a paused conversation is told how it goes on in the words of what its user
 * may do; `/budget` shows where it stands; a user mapped to nobody may neither continue nor raise,
 * a member may continue once, an operator may raise; spend, approvals and actions are counted for
 * the mapped principal. Telegram on SQLite and PostgreSQL, Discord and Slack on SQLite.
 *
 * The demo model's prompts here are a few hundred tokens; with `max_output_tokens: 1000` and a
 * session limit of 1,800 tokens, a short first exchange fits and a long second message pauses.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKENDS } from './gateway-harness.js';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { useTelegramDaemon } from './telegram-fixture.js';
import { useDiscordDaemon } from './discord-fixture.js';
import { useSlackDaemon, said } from './slack-fixture.js';

const BUDGETS = ['budgets:', '  max_output_tokens: 1000', '  session: {tokens: 1800}'];
const LONG = `long ${'words to spend '.repeat(250)}`;
const PAUSED = /^Paused: this session's budget is used up/;
const MEMBER_HINT =
  'Send /budget continue to let it run one more turn, or ask the gateway operator to raise it; then send your message again.';
const CONTINUED =
  'The next turn of this conversation may run past its budget, once. Send your message again.';
const NOT_YOURS =
  'Only someone the gateway knows by name may let this conversation run past its budget (platforms.PLATFORM.members); ask the gateway operator.';

describe.each(BACKENDS)('Telegram on %s', (store) => {
  // Olga is the dashboard's owner (an operator) and Mia the member mia, in the chat too.
  const tg = useTelegramDaemon({
    store,
    yaml: BUDGETS,
    telegramYaml: ['    members:', '      "7420": dashboard:owner', '      "7430": member:mia'],
  });

  it('a user mapped to nobody is told how it goes on; /budget shows the pause; continue and raise are refused', async () => {
    await tg.start();
    const chat = { id: 7410, type: 'private' as const };
    const user = { id: 7410, first_name: 'Ines' };
    expect(await tg.ask(chat, user, 'hello')).toMatch(/you said: hello/);
    const notice = await tg.ask(chat, user, LONG);
    expect(notice).toMatch(PAUSED);
    expect(notice).toContain(
      'Messages sent meanwhile are not answered. It goes on once the budget has room again: a new day (UTC) for a daily limit, or when the gateway operator raises it or lets it run one more turn. /budget shows where it stands.',
    );
    const shown = await tg.ask(chat, user, '/budget');
    expect(shown).toMatch(/^this conversation: \d+ of 1800 tokens, \$0\.0000\n/);
    expect(shown).toContain('your day (');
    expect(shown).toContain('Paused: session tokens used up.');
    expect(await tg.ask(chat, user, '/budget continue')).toBe(NOT_YOURS.replace('PLATFORM', 'telegram'));
    expect(await tg.ask(chat, user, '/budget raise --tokens 99999')).toBe(
      'Only a gateway operator may raise a budget (platforms.telegram.members maps a user to one).',
    );
    expect(await tg.ask(chat, user, '/budget raise --tokens lots')).toBe(
      '/budget raise: --tokens must be a number above 0.',
    );
    expect(await tg.ask(chat, user, '/budget later')).toBe(
      'Usage: /budget, /budget continue, or /budget raise --tokens N --usd X',
    );
    // Nothing was lifted.
    expect(await tg.ask(chat, user, '/budget')).toContain('Paused: session tokens used up.');
  });

  it("a member's chat: told to /budget continue, which runs one more turn; the member may not raise", async () => {
    const chat = { id: 7430, type: 'private' as const };
    const mia = { id: 7430, first_name: 'Mia' };
    expect(await tg.ask(chat, mia, 'hello from mia')).toMatch(/you said: hello from mia/);
    const notice = await tg.ask(chat, mia, LONG);
    expect(notice).toMatch(/^Paused: this session's budget is used up/);
    expect(notice).toContain(MEMBER_HINT);
    expect(await tg.ask(chat, mia, '/budget raise --tokens 100000')).toMatch(
      /^Only a gateway operator may raise/,
    );
    expect(await tg.ask(chat, mia, '/budget continue')).toBe(CONTINUED);
    expect(await tg.ask(chat, mia, 'one more please')).toMatch(/you said: one more please/);
    // The turn after it is checked again: paused anew, and told so again.
    expect(await tg.ask(chat, mia, 'and another')).toMatch(/^Paused: this session's budget is used up/);
    expect(await tg.ask(chat, mia, '/budget continue')).toMatch(/^The next turn of this conversation/);
    // Granted and not yet taken: the pause is lifted, so there is nothing more to continue.
    expect(await tg.ask(chat, mia, '/budget')).toContain(
      'The next turn may run past the limits (continue once).',
    );
    const idle = { id: 7431, type: 'private' as const };
    expect(await tg.ask(idle, { id: 7430, first_name: 'Mia' }, '/budget continue')).toBe(
      'This conversation is not paused by its budget: there is nothing to continue.',
    );
  });

  it("an operator's chat raises its limit; spend and actions are counted for the mapped principals; a member sees only her own chat", async () => {
    const chat = { id: 7420, type: 'private' as const };
    const olga = { id: 7420, first_name: 'Olga' };
    await tg.ask(chat, olga, 'hello from olga');
    const notice = await tg.ask(chat, olga, LONG);
    expect(notice).toContain(
      "or /budget raise --tokens N (or --usd X) to raise this conversation's own limit",
    );
    expect(await tg.ask(chat, olga, '/budget raise --tokens 100000 --usd 5')).toBe(
      "This conversation's budget is now 100000 tokens and $5. Send your message again to go on.",
    );
    expect(await tg.ask(chat, olga, 'after the raise')).toMatch(/you said: after the raise/);
    expect(await tg.ask(chat, olga, '/budget')).toMatch(
      /^this conversation: \d+ of 100000 tokens, \$0\.0000 of \$5\n/,
    );

    const client = await tg.daemon!.connect();
    const today = new Date().toISOString().slice(0, 10);
    const summary = await client.call<{ rows: { principal: string; turns: number }[] }>('cost.summary', {
      from_day: today,
    });
    const principals = new Set(summary.rows.map((r) => r.principal));
    expect(principals).toEqual(new Set(['telegram:7410', 'member:mia', 'dashboard:owner']));
    const { rows } = await client.call<{ rows: { principal: string; path: string; action: string }[] }>(
      'audit.list',
      { limit: 500, actor: 'member:mia' },
    );
    // Each of Mia's messages that started a turn (the ones refused by the budget too), by her principal.
    expect(rows.filter((r) => r.action === 'submitted' && r.path === 'telegram')).toHaveLength(4);
    const strangers = await client.call<{ rows: unknown[] }>('audit.list', {
      limit: 10,
      actor: 'telegram:7410',
    });
    expect(strangers.rows).toEqual([]);

    // Mia, as the member she is on the dashboard, sees her own chat and no one else's.
    const { ticket } = await requestTicket(tg.daemon!.layout.controlSocket, 'interactive', undefined, 'mia');
    const mia = await GatewayClient.connect(tg.daemon!.url, ticket);
    type Listed = { sessions: { session_id: string; kind: string; platform?: string }[] };
    const hers = (await mia.call<Listed>('session.list', { scope: 'all' })).sessions;
    expect(hers.map((r) => [r.kind, r.platform])).toEqual([['platform', 'telegram']]);
    const page = await mia.call<{ messages: { content: string | null }[] }>('session.messages', {
      session_id: hers[0]!.session_id,
    });
    expect(page.messages.map((m) => m.content)).toContain('hello from mia');
    const all = (await client.call<Listed>('session.list', { scope: 'all' })).sessions;
    const others = all.filter((r) => r.kind === 'platform' && r.session_id !== hers[0]!.session_id);
    expect(others.length).toBeGreaterThanOrEqual(2);
    for (const other of others)
      await expect(mia.call('session.messages', { session_id: other.session_id })).rejects.toHaveProperty(
        'reason',
        'not_found',
      );
    await mia.close();
    await client.close();
    expect(await tg.stop()).toBe(0);
  });
});

describe('Discord on sqlite', () => {
  const KIM = { id: '310', username: 'kim' };
  const MIA = { id: '311', username: 'mia' };
  const OLGA = { id: '312', username: 'olga' };
  const dc = useDiscordDaemon({
    yaml: BUDGETS,
    discordYaml: ['    members:', `      '${MIA.id}': member:mia`, `      '${OLGA.id}': dashboard:owner`],
  });

  it('/budget as a slash command: shown to anyone, continue for a member only, raise for an operator', async () => {
    const { standIn } = dc;
    for (const id of ['510', '511', '512']) standIn.channel({ id, type: 1 });
    await dc.start();
    const budget = (channel: string, user: typeof KIM, action?: string) =>
      standIn.interact(channel, user, {
        type: 2,
        name: 'budget',
        ...(action === undefined ? {} : { options: [{ name: 'action', type: 3, value: action }] }),
      });

    expect(await dc.ask('510', KIM, 'hello')).toBe(said('hello'));
    expect(await dc.ask('510', KIM, LONG)).toMatch(PAUSED);
    budget('510', KIM);
    expect(String((await dc.waitForPost('510', /^this conversation:/)).body.content)).toContain(
      'Paused: session tokens used up.',
    );
    budget('510', KIM, 'continue');
    await dc.waitForPost('510', /^Only someone the gateway knows by name/);
    expect(dc.posts('510').at(-1)).toBe(NOT_YOURS.replace('PLATFORM', 'discord'));

    await dc.ask('511', MIA, 'hello from mia');
    expect(await dc.ask('511', MIA, LONG)).toContain(MEMBER_HINT);
    budget('511', MIA, 'raise --tokens 100000');
    await dc.waitForPost('511', /^Only a gateway operator may raise/);
    budget('511', MIA, 'continue');
    await dc.waitForPost('511', /^The next turn of this conversation may run past its budget/);
    expect(await dc.ask('511', MIA, 'one more please')).toBe(said('one more please'));

    await dc.ask('512', OLGA, 'hello from olga');
    expect(await dc.ask('512', OLGA, LONG)).toMatch(PAUSED);
    budget('512', OLGA, 'raise --tokens 100000');
    await dc.waitForPost('512', /^This conversation's budget is now 100000 tokens\./);
    expect(await dc.ask('512', OLGA, 'after the raise')).toBe(said('after the raise'));
  });
});

describe('Slack on sqlite', () => {
  const KIM = { id: 'U0KIM', name: 'kim' };
  const MIA = { id: 'U0MIA', name: 'mia' };
  const OLGA = { id: 'U0OLGA', name: 'olga' };
  const sl = useSlackDaemon({
    yaml: BUDGETS,
    slackYaml: ['    members:', `      ${MIA.id}: member:mia`, `      ${OLGA.id}: dashboard:owner`],
  });

  it('/budget as a slash command and typed: continue for a member only, raise for an operator', async () => {
    const { standIn } = sl;
    for (const user of [KIM, MIA, OLGA]) {
      standIn.user(user);
      standIn.conversation({ id: `D${user.id}`, kind: 'im' });
    }
    await sl.start();

    expect(await sl.ask('DU0KIM', KIM, 'hello')).toBe(said('hello'));
    expect(await sl.ask('DU0KIM', KIM, LONG)).toMatch(PAUSED);
    standIn.command('DU0KIM', KIM, '/gatehouse', 'budget');
    expect(String((await sl.waitForPost('DU0KIM', /^this conversation:/)).body.text)).toContain(
      'Paused: session tokens used up.',
    );
    standIn.command('DU0KIM', KIM, '/budget', 'continue');
    await sl.waitForPost('DU0KIM', /^Only someone the gateway knows by name/);
    expect(sl.posts('DU0KIM').at(-1)).toBe(NOT_YOURS.replace('PLATFORM', 'slack'));

    await sl.ask('DU0MIA', MIA, 'hello from mia');
    expect(await sl.ask('DU0MIA', MIA, LONG)).toContain(MEMBER_HINT);
    standIn.command('DU0MIA', MIA, '/gatehouse', 'budget continue');
    await sl.waitForPost('DU0MIA', /^The next turn of this conversation may run past its budget/);
    expect(await sl.ask('DU0MIA', MIA, 'one more please')).toBe(said('one more please'));

    await sl.ask('DU0OLGA', OLGA, 'hello from olga');
    expect(await sl.ask('DU0OLGA', OLGA, LONG)).toMatch(PAUSED);
    expect(await sl.ask('DU0OLGA', OLGA, '/budget raise --usd 5 --tokens 100000')).toBe(
      "This conversation's budget is now 100000 tokens and $5. Send your message again to go on.",
    );
    expect(await sl.ask('DU0OLGA', OLGA, 'after the raise')).toBe(said('after the raise'));
  });

  it("an operator's typed /approve is audited as their principal; members' limits that chats cannot meet refuse a member's messages", async () => {
    const { standIn } = sl;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-members-'));
    const victim = path.join(dir, 'victim');
    fs.writeFileSync(victim, 'x');
    // Olga's conversation has room since her raise.
    standIn.say('DU0OLGA', OLGA, `run: rm -rf ${victim}`);
    await sl.waitForPost('DU0OLGA', /^Approval needed/);
    expect(await sl.ask('DU0OLGA', OLGA, '/approve')).toBe('Approved.');
    await sl.waitForPost('DU0OLGA', /returned/);
    expect(fs.existsSync(victim)).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
    const client = await sl.daemon!.connect();
    const { rows } = await client.call<{ rows: { action: string; path: string; outcome: string }[] }>(
      'audit.list',
      { limit: 500, actor: 'dashboard:owner' },
    );
    expect(rows.filter((r) => r.path === 'slack').map((r) => [r.action, r.outcome])).toContainEqual([
      'approved',
      'ok',
    ]);
    await client.close();

    // Members may use only a model the chats do not run: a member's message is answered with why,
    // and runs nothing; an operator's and an unmapped user's run as before.
    await sl.stop();
    sl.reconfigure([...BUDGETS, 'auth:', '  members:', '    models: [a-model-chats-do-not-run]']);
    await sl.start();
    const asked = sl.model.requests.length;
    expect(await sl.ask('DU0MIA', MIA, 'refused for mia')).toBe(
      'Your messages here are not answered: chats run default/gatehouse-demo, and members may use the models a-model-chats-do-not-run (auth.members.models), not "gatehouse-demo". Use the dashboard, or ask the gateway operator.',
    );
    expect(await sl.ask('DU0OLGA', OLGA, 'fine for olga')).toBe(said('fine for olga'));
    expect(sl.asked('refused for mia')).toBe(0);
    expect(sl.model.requests.length).toBeGreaterThan(asked);
  });
});
