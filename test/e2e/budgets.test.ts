/**
 * Issue 29, budgets (docs/cost.md, "Budgets") through the real daemon, on SQLite and PostgreSQL:
 * a limit reached mid-turn across a SIGKILL (the crashed call counted once, at its worst case, and
 * never again), the per-day rollover on the budget clock, a launch budget above the profile's
 * refused, raise and continue-once, and a Telegram chat told exactly once.
 *
 * The demo model's prompts here are a few hundred tokens; `max_output_tokens: 1000` makes each
 * call's worst case about 1,300 to 1,600 tokens, and the limits below are set between those.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient, RpcCallError } from '../../src/surfaces/client/rpc-client.js';
import { BACKENDS, nextEvent, type Backend, type RunningDaemon } from './gateway-harness.js';
import { died, modelConfig, quiet, useRecoveryRig, type Ack } from './recovery-harness.js';
import { storeRows } from './store-rows.js';
import { runCli } from './cli.js';
import { useTelegramDaemon } from './telegram-fixture.js';
import { TestClock } from './jobs-harness.js';
import { startDemoModel } from '../../src/runtime/demo/server.js';
import { SUMMARY_REQUEST_MARKER } from '../../src/runtime/context/summary-prompt.js';

const rig = useRecoveryRig();

/** The example of docs/cost.md, "Budgets", exactly as written there. */
const DOCUMENTED = (() => {
  const docs = readFileSync(new URL('../../docs/cost.md', import.meta.url), 'utf8');
  const section = docs.slice(docs.indexOf('## Budgets'));
  return /```yaml\n([\s\S]*?)```/.exec(section)![1]!;
})();

type Spend = { tokens: number; usd: number };
type Limits = 'session' | 'principal_daily' | 'daily';
interface BudgetView {
  day: string;
  limits: Record<Limits, { tokens: number | null; usd: number | null }>;
  spent: Record<Limits, Spend>;
  paused: { reason: string; limit: string; measure: string } | null;
  continue_once: boolean;
}
interface CallRow {
  turn_id: string;
  state: string;
  reserved_tokens: number;
  tokens: number;
}

const budgets = (...lines: string[]) => [
  'budgets:',
  '  max_output_tokens: 1000',
  ...lines.map((l) => `  ${l}`),
];

async function session(client: GatewayClient, params: Record<string, unknown> = {}): Promise<string> {
  const { session_id } = await client.call<{ session_id: string }>('session.create', {
    cwd: mkdtempSync(join(tmpdir(), 'gh-budget-')),
    yolo: true,
    ...params,
  });
  await client.call('session.resume', { session_id });
  return session_id;
}

/** Submits `text` and resolves with the turn's turn.complete event. */
async function turn(client: GatewayClient, session_id: string, text: string) {
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === session_id);
  const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === session_id);
  await client.call('prompt.submit', { session_id, submission_id: `s-${Math.random()}`, text });
  await settled;
  return (await done).event as unknown as {
    outcome: string;
    error: { reason: string; message: string } | null;
  };
}

async function callRows(d: RunningDaemon, store: Backend): Promise<CallRow[]> {
  const rows = await storeRows(d, store);
  try {
    return await rows.all<CallRow>(
      'SELECT turn_id, state, reserved_tokens, tokens FROM budget_calls ORDER BY reserved_at, reservation_id',
    );
  } finally {
    await rows.close();
  }
}

const sum = (rows: CallRow[]) => rows.reduce((n, r) => n + Number(r.tokens), 0);

// Each case runs one to three daemons and a dozen turns: under a loaded machine more than 30 s.
describe.each(BACKENDS)('budgets on %s', { timeout: 120_000 }, (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  it('a limit reached mid-turn across a SIGKILL: the crashed call counts once, at its worst case', async () => {
    const demo = await rig.model();
    // Two calls fit (the tool call, then the answer it crashes in); a third worst case does not.
    const config = modelConfig(demo, ...budgets('session: {tokens: 2000}'));
    const first = await rig.daemon({ config, env: { GATEHOUSE_TEST_FAULTS: 'model.streaming' } });
    const client = await first.connect();
    const session_id = await session(client);
    const ack = await client.call<Ack>('prompt.submit', {
      session_id,
      submission_id: 'one',
      text: 'run: echo hi',
    });
    await died(first);

    const before = await callRows(first, store);
    expect(before.map((r) => r.state)).toEqual(['settled', 'reserved']);
    expect(before.every((r) => r.turn_id === ack.admission_id)).toBe(true);
    // Every request went out with the output cap it was reserved at.
    expect(demo.requests.map((r) => (r.body as { max_tokens?: number } | undefined)?.max_tokens)).toEqual([
      1000, 1000,
    ]);

    const second = await rig.daemon({ home: first.home, config });
    const viewer = await second.connect();
    const snap = await quiet(viewer, session_id);
    expect(snap.pending_admissions).toEqual([]);
    const replay = await viewer.call<{ events: { event: { type: string; error?: { reason: string } } }[] }>(
      'session.events.since',
      { session_id, epoch: second.epoch, after_seq: 0 },
    );
    const ends = replay.events.map((e) => e.event).filter((e) => e.type === 'turn.complete');
    expect(ends).toMatchObject([{ outcome: 'failed', error: { reason: 'budget_exhausted' } }]);
    expect(replay.events.map((e) => e.event.type)).toContain('budget.exhausted');
    // The resumed turn's call was refused: the model was not asked again.
    expect(demo.requests).toHaveLength(2);
    const view = await viewer.call<BudgetView>('session.budget', { session_id });
    expect(view.paused).toMatchObject({ reason: 'budget_exhausted', limit: 'session', measure: 'tokens' });
    await second.stop();

    // The open reservation was settled at start-up at its worst case; nothing else was added.
    const after = await callRows(first, store);
    expect(after.map((r) => r.state)).toEqual(['settled', 'recovered']);
    expect(Number(after[1]!.tokens)).toBe(Number(before[1]!.reserved_tokens));
    expect(view.spent.session.tokens).toBe(sum(after));
    expect(sum(after)).toBe(Number(before[0]!.tokens) + Number(before[1]!.reserved_tokens));

    // Another restart settles nothing twice and runs nothing again.
    const third = await rig.daemon({ home: first.home, config });
    const again = await third.connect();
    expect((await again.call<BudgetView>('session.budget', { session_id })).spent.session.tokens).toBe(
      sum(after),
    );
    await third.stop();
    expect(await callRows(first, store)).toEqual(after);
  });

  it('continue-once runs one turn past the limit; an operator raises it; a worker may not', async () => {
    const demo = await rig.model();
    const d = await rig.daemon({ config: modelConfig(demo, ...budgets('session: {tokens: 1500}')) });
    const client = await d.connect();
    const session_id = await session(client);
    expect((await turn(client, session_id, 'hello')).outcome).toBe('completed');
    const refused = await turn(client, session_id, `hello again ${'and again '.repeat(100)}`);
    expect(refused.error).toMatchObject({ reason: 'budget_exhausted' });
    expect(refused.error!.message).toMatch(
      /^Paused: this session's budget is used up \(\d[\d,]* tokens of 1,500 tokens spent/,
    );
    expect(refused.error!.message).toContain('session.budget.continue');
    const calls = demo.requests.length;

    // Paused with no room for even the smallest turn: a prompt is not taken at all.
    const held = await client
      .call('prompt.submit', { session_id, submission_id: 'held', text: 'are you there?' })
      .catch((error: unknown) => error as RpcCallError);
    expect(held).toMatchObject({
      code: -32019,
      reason: 'budget_paused',
      details: { session_id, limit: 'session', measure: 'tokens', limit_value: 1500 },
    });
    expect((held as RpcCallError).message).toMatch(
      /^Paused: this session's budget is used up \(\d[\d,]* tokens of 1,500 tokens spent\), so no prompt is taken until it has room again\. An operator may raise it/,
    );
    const snapshot = await client.call<{ pending_admissions: unknown[] }>('session.resume', { session_id });
    expect(snapshot.pending_admissions).toEqual([]);

    await expect(client.call('session.budget.continue', { session_id: 'nope' })).rejects.toMatchObject({
      reason: 'not_found',
    });
    const shown = await runCli(d.home, ['budget', 'show', session_id]);
    expect(shown.stdout).toMatch(/^this session: \d+ of 1500 tokens, \$0\.0000\n/);
    expect(shown.stdout).toContain('paused: budget_exhausted (session tokens)');
    const continued = await runCli(d.home, ['budget', 'continue', session_id]);
    expect(continued.stdout).toBe(`The next turn of ${session_id} may run past its budget, once.\n`);
    expect(await client.call<BudgetView>('session.budget', { session_id })).toMatchObject({
      paused: null,
      continue_once: true,
    });
    expect((await turn(client, session_id, 'once more')).outcome).toBe('completed');
    expect(demo.requests.length).toBe(calls + 1);
    // Only once: the next turn is refused again, and the model is not called.
    expect((await turn(client, session_id, 'and once more')).error).toMatchObject({
      reason: 'budget_exhausted',
    });
    expect(demo.requests.length).toBe(calls + 1);
    await expect(
      client.call('prompt.submit', { session_id, submission_id: 'held-again', text: 'hello?' }),
    ).rejects.toMatchObject({ reason: 'budget_paused' });

    const worker = await d.connect('worker-adoption');
    await expect(worker.call('session.budget.raise', { session_id, tokens: 100000 })).rejects.toMatchObject({
      code: -32001,
      reason: 'permission_denied',
    });
    const raised = await client.call<BudgetView>('session.budget.raise', { session_id, tokens: 100000 });
    expect(raised).toMatchObject({ paused: null, limits: { session: { tokens: 100000 } } });
    expect((await turn(client, session_id, 'after the raise')).outcome).toBe('completed');
    const cli = await runCli(d.home, ['budget', 'raise', session_id, '--tokens', '100000']);
    expect(cli.stdout).toMatch(/^this session: \d+ of 100000 tokens, \$0\.0000\n/);
    const usd = await runCli(d.home, ['budget', 'raise', session_id, '--usd', '5']);
    expect(usd.stdout).toMatch(/^this session: \d+ of 100000 tokens, \$0\.0000 of \$5\n/);
    // Nothing paused now: there is nothing to continue.
    await expect(client.call('session.budget.continue', { session_id })).rejects.toMatchObject({
      code: -32017,
      reason: 'budget_not_paused',
    });
    const again = await runCli(d.home, ['budget', 'continue', session_id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('not paused by its budget');

    // The same from the chat: /budget shows, raises (the owner's chat is an operator's), continues.
    const chat = await runCli(d.home, ['chat', '--resume', session_id], {
      input: '/budget\n/budget raise --tokens 200000\n/budget raise --tokens nine\n/budget continue\n',
    });
    expect(chat.stdout).toMatch(/this session: \d+ of 100000 tokens, \$0\.0000 of \$5\n/);
    expect(chat.stdout).toMatch(/this session: \d+ of 200000 tokens, \$0\.0000 of \$5\n/);
    expect(chat.stdout).toContain(
      '(--tokens must be a number above 0; usage: /budget raise --tokens N --usd X)',
    );
    expect(chat.stdout + chat.stderr).toContain('not paused by its budget');
    expect((await client.call<BudgetView>('session.budget', { session_id })).limits.session.tokens).toBe(
      200000,
    );
  });

  it("the documented budgets: a launch budget lowers the profile's limit, one above it is refused", async () => {
    const demo = await rig.model();
    const d = await rig.daemon({ config: modelConfig(demo, DOCUMENTED) });
    const client = await d.connect();
    const above = await client
      .call('session.create', { cwd: tmpdir(), budget: { tokens: 60000 } })
      .catch((error: unknown) => error as RpcCallError);
    expect(above).toMatchObject({ code: -32016, reason: 'budget_above_profile' });
    expect((above as RpcCallError).message).toContain("above the profile's budgets.session.tokens (50000)");
    await expect(client.call('session.create', { cwd: tmpdir(), budget: { usd: 3 } })).rejects.toMatchObject({
      code: -32016,
    });
    await expect(client.call('session.create', { cwd: tmpdir(), budget: {} })).rejects.toMatchObject({
      reason: 'invalid_params',
    });
    const session_id = await session(client, { budget: { tokens: 20000 } });
    const view = await client.call<BudgetView>('session.budget', { session_id });
    expect(view.limits).toEqual({
      session: { tokens: 20000, usd: 2 },
      principal_daily: { tokens: null, usd: 10 },
      daily: { tokens: null, usd: 50 },
    });
    expect((await turn(client, session_id, 'hello')).outcome).toBe('completed');
    expect(demo.requests.map((r) => (r.body as { max_tokens?: number } | undefined)?.max_tokens)).toEqual([
      4096,
    ]);
  });

  it("compression's summary calls are reserved and settled like the turn's, in a turn and by session.compress", async () => {
    const demo = await startDemoModel({ host: '127.0.0.1', port: 0, record: true, contextWindow: 4096 });
    rig.models.push(demo);
    const config = [
      `model: {base_url: ${JSON.stringify(demo.baseUrl)}, model: gatehouse-demo, context_window: 4096}`,
      'compression: {threshold: 0.75, tail_tokens: 200}',
      ...budgets('session: {tokens: 1000000}').map((l) =>
        l.replace('max_output_tokens: 1000', 'max_output_tokens: 256'),
      ),
    ].join('\n');
    const d = await rig.daemon({ config });
    const client = await d.connect();
    const session_id = await session(client, { toolsets: [] });
    const compressed = nextEvent(client, 'session.compressed', (e) => e.session_id === session_id);
    let seen: Record<string, unknown> | null = null;
    void compressed.then((e) => (seen = e.event));
    const padding = 'lorem ipsum dolor sit amet '.repeat(30);
    for (let n = 1; seen === null && n <= 30; n++)
      expect((await turn(client, session_id, `message ${n}: ${padding}`)).outcome).toBe('completed');
    expect(seen).toMatchObject({ reason: 'threshold' });
    const manual = await client.call<{ compressed: boolean }>('session.compress', { session_id });
    expect(manual.compressed).toBe(true);

    const modelCalls = demo.requests.filter((r) => r.body !== undefined);
    const summaries = modelCalls.filter((r) => {
      const first = (r.body as { messages?: { content?: unknown }[] }).messages?.[0]?.content;
      return typeof first === 'string' && first.startsWith(SUMMARY_REQUEST_MARKER);
    });
    expect(summaries.length).toBeGreaterThanOrEqual(2);
    // Every call the model received, the summaries included, was reserved first and is settled.
    const rows = await callRows(d, store);
    expect(rows).toHaveLength(modelCalls.length);
    expect(rows.every((r) => r.state === 'settled')).toBe(true);
    expect(modelCalls.every((r) => (r.body as { max_tokens?: number }).max_tokens === 256)).toBe(true);
    // session.compress's are its own (no turn owns them); the threshold's belong to the turn.
    expect(rows.filter((r) => r.turn_id.startsWith('compress_')).length).toBeGreaterThanOrEqual(1);
    const view = await client.call<BudgetView>('session.budget', { session_id });
    expect(view.spent.session.tokens).toBe(sum(rows));
  });

  it("a principal's daily limit rolls over with the budget day, on the running daemon", async () => {
    const demo = await rig.model();
    const config = modelConfig(demo, ...budgets('principal_daily: {tokens: 1450}'));
    const clock = new TestClock(mkdtempSync(join(tmpdir(), 'gh-budget-clock-')), '2026-03-01T23:59:00Z');
    const d = await rig.daemon({ config, env: clock.env() });
    const client = await d.connect();
    const one = await session(client);
    expect((await turn(client, one, 'hello')).outcome).toBe('completed');
    // Another session of the same principal shares the day's limit.
    const two = await session(client);
    const refused = await turn(client, two, `hello ${'and again '.repeat(100)}`);
    expect(refused.error?.message).toMatch(/^Paused: your budget for today \(UTC\) is used up/);
    expect((await client.call<BudgetView>('session.budget', { session_id: two })).day).toBe('2026-03-01');

    // A new day on the clock file: the principal's day is empty again. Session one's next worst
    // case fits the limit; session two's history alone is now longer than it.
    clock.set('2026-03-02T00:00:05Z');
    const view = await client.call<BudgetView>('session.budget', { session_id: one });
    expect(view.day).toBe('2026-03-02');
    expect(view.spent.principal_daily.tokens).toBe(0);
    expect(view.spent.session.tokens).toBeGreaterThan(0);
    expect((await turn(client, one, 'hello tomorrow')).outcome).toBe('completed');
    expect(
      (await client.call<BudgetView>('session.budget', { session_id: one })).spent.principal_daily.tokens,
    ).toBeGreaterThan(0);
  });
});

describe.each(BACKENDS)('a Telegram chat on %s', (store) => {
  const tg = useTelegramDaemon({ store, yaml: budgets('session: {tokens: 1800}') });

  it('is told once that its budget is used up, and not again while it stays paused', async () => {
    await tg.start();
    const chat = { id: 7410, type: 'private' as const };
    const user = { id: 7410, first_name: 'Ines' };
    expect(await tg.ask(chat, user, 'hello')).toMatch(/you said: hello/);
    const notice = await tg.ask(chat, user, `long ${'words to spend '.repeat(250)}`);
    expect(notice).toMatch(/^Paused: this session's budget is used up/);
    expect(notice).toContain('Messages sent meanwhile are not answered');
    // A later message is taken (the /cost after it is answered) and not answered; the stop drains
    // whatever still runs, so every reply the daemon would send is sent by then.
    tg.standIn.inject({ chat, from: user, text: 'are you there?' });
    expect(await tg.ask(chat, user, '/cost')).toMatch(/^This conversation has cost/);
    expect(await tg.stop()).toBe(0);
    expect(tg.repliesTo(chat.id).filter((t) => t.startsWith('Paused:'))).toHaveLength(1);
    expect(tg.asked('are you there?')).toBe(0);
  });
});
