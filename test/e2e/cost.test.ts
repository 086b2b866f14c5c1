/**
 * Issue 29, cost (docs/cost.md) through the real daemon, on SQLite and PostgreSQL: a provider that
 * reports `usage.cost` (the demo model asked to), one priced by the configuration, one with no price.
 * Each turn's cost reaches turn.complete, the session's total (session.cost, session.list) and the
 * per-day, per-principal, per-provider sums (cost.summary), and all of it is still there after a
 * restart. `/cost` in the chat prints it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild, runCli, tempHome } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  startDaemon,
  writeConfig,
  type RunningDaemon,
} from './gateway-harness.js';
import { useTelegramDaemon } from './telegram-fixture.js';

beforeAll(requireBuild);

/** US dollars per million tokens the reporting demo model charges. */
const REPORTED_RATE = 3000;
const PRICE = { input: 1000, output: 4000 };

let reporting: DemoModelServer;
let plain: DemoModelServer;
beforeAll(async () => {
  reporting = await startDemoModel({ reportCostPerMTok: REPORTED_RATE });
  plain = await startDemoModel();
});
afterAll(async () => {
  await reporting.close();
  await plain.close();
});

const running: RunningDaemon[] = [];
/** Homes whose daemon `gatehouse chat` started. */
const chatHomes: string[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await Promise.all(chatHomes.splice(0).map((home) => runCli(home, ['stop'])));
  await dropTestSchemas();
});

function config(): string {
  return [
    'providers:',
    '  reporting:',
    `    base_url: ${reporting.baseUrl}`,
    '    models: [gatehouse-demo]',
    '  priced:',
    `    base_url: ${plain.baseUrl}`,
    '    models: [gatehouse-demo]',
    '  unpriced:',
    `    base_url: ${plain.baseUrl}`,
    '    models: [mystery-model]',
    'pricing:',
    '  priced:',
    `    gatehouse-demo: {input_per_mtok: ${PRICE.input}, output_per_mtok: ${PRICE.output}}`,
    '',
  ].join('\n');
}

type Usage = {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  cost_usd?: number;
  cost_status?: string;
};

async function turn(client: GatewayClient, session_id: string, submission_id: string, text: string) {
  const settled = nextEvent(client, 'admission.settled', (e) => e.session_id === session_id);
  const done = nextEvent(client, 'turn.complete', (e) => e.session_id === session_id);
  await client.call('prompt.submit', { session_id, submission_id, text });
  await settled;
  return (await done).event['usage'] as Usage;
}

async function session(client: GatewayClient, provider: string): Promise<string> {
  const { session_id } = await client.call<{ session_id: string }>('session.create', {
    cwd: mkdtempSync(join(tmpdir(), 'gh-work-')),
    provider,
  });
  await client.call('session.resume', { session_id });
  return session_id;
}

const close = (expected: number) => ({
  asymmetricMatch: (actual: unknown) => typeof actual === 'number' && Math.abs(actual - expected) < 1e-9,
  toString: () => `close to ${expected}`,
});

describe.each(BACKENDS)('cost on %s', (store) => {
  it('reported, estimated and unknown, per turn, per session and summed, kept across a restart', async () => {
    const first = await startDaemon({ store, config: config() });
    running.push(first);
    const client = await first.connect();

    const r = await session(client, 'reporting');
    const r1 = await turn(client, r, 'r1', 'hello');
    const r2 = await turn(client, r, 'r2', 'run: echo priced');
    // The provider's own figure, per call: tokens × its rate.
    expect(r1).toMatchObject({
      cost_status: 'reported',
      cost_usd: close((r1.total_tokens * REPORTED_RATE) / 1e6),
    });
    expect(r2.cost_status).toBe('reported');

    const p = await session(client, 'priced');
    const p1 = await turn(client, p, 'p1', 'hello');
    const estimate = (p1.input_tokens * PRICE.input + p1.output_tokens * PRICE.output) / 1e6;
    expect(p1).toMatchObject({ cost_status: 'estimated', cost_usd: close(estimate) });

    const u = await session(client, 'unpriced');
    const u1 = await turn(client, u, 'u1', 'hello');
    expect(u1).toMatchObject({ cost_status: 'unknown', cost_usd: 0 });

    const check = async (c: GatewayClient) => {
      expect(await c.call('session.cost', { session_id: r })).toMatchObject({
        estimated_cost_usd: close(r1.cost_usd! + r2.cost_usd!),
        cost_status: 'reported',
      });
      expect(await c.call('session.cost', { session_id: p })).toMatchObject({
        estimated_cost_usd: close(estimate),
        cost_status: 'estimated',
      });
      expect(await c.call('session.cost', { session_id: u })).toMatchObject({
        estimated_cost_usd: 0,
        cost_status: 'unknown',
      });
      const listed = await c.call<{ sessions: { session_id: string; cost: unknown }[] }>('session.list', {
        scope: 'all',
      });
      expect(listed.sessions.find((s) => s.session_id === p)?.cost).toEqual({
        estimated_usd: close(estimate),
        status: 'estimated',
      });
      const today = new Date().toISOString().slice(0, 10);
      const summary = await c.call<{ rows: Record<string, unknown>[]; turns: number; total_usd: number }>(
        'cost.summary',
        { from_day: today, to_day: today },
      );
      expect(summary.rows).toEqual([
        expect.objectContaining({
          day: today,
          principal: 'native:owner',
          provider: 'priced',
          model: 'gatehouse-demo',
          turns: 1,
          cost_usd: close(estimate),
          cost_status: 'estimated',
        }),
        expect.objectContaining({
          principal: 'native:owner',
          provider: 'reporting',
          model: 'gatehouse-demo',
          turns: 2,
          input_tokens: r1.input_tokens + r2.input_tokens,
          cost_usd: close(r1.cost_usd! + r2.cost_usd!),
          cost_status: 'reported',
        }),
        expect.objectContaining({
          provider: 'unpriced',
          model: 'mystery-model',
          turns: 1,
          cost_usd: 0,
          cost_status: 'unknown',
        }),
      ]);
      expect(summary.turns).toBe(4);
      expect(summary.total_usd).toEqual(close(r1.cost_usd! + r2.cost_usd! + estimate));
      // Another day has nothing.
      expect(await c.call('cost.summary', { from_day: '2001-01-01', to_day: '2001-01-01' })).toEqual({
        rows: [],
        total_usd: 0,
        turns: 0,
      });
    };
    await check(client);

    await first.stop();
    running.splice(running.indexOf(first), 1);
    const second = await startDaemon({ store, home: first.home });
    running.push(second);
    await check(await second.connect());
  });
});

describe('a chat-platform turn', () => {
  const tg = useTelegramDaemon({
    yaml: [
      'pricing:',
      '  default:',
      `    gatehouse-demo: {input_per_mtok: ${PRICE.input}, output_per_mtok: ${PRICE.output}}`,
    ],
  });

  it("is summed under <platform>:<user id>, and /cost answers the conversation's total", async () => {
    const d = await tg.start();
    const chat = { id: 7310, type: 'private' as const };
    const user = { id: 7310, first_name: 'Noor' };
    await tg.ask(chat, user, 'hello');
    expect(await tg.ask(chat, user, '/cost')).toMatch(
      /^This conversation has cost about \$\d+\.\d{4} \(estimated from token prices\) · \d+ tokens \(\d+ in, \d+ out\)\.$/,
    );
    const client = await d.connect();
    const today = new Date().toISOString().slice(0, 10);
    const summary = await client.call<{ rows: Record<string, unknown>[] }>('cost.summary', {
      from_day: today,
    });
    expect(summary.rows).toEqual([
      expect.objectContaining({
        principal: 'telegram:7310',
        provider: 'default',
        model: 'gatehouse-demo',
        turns: 1,
        cost_status: 'estimated',
      }),
    ]);
    expect(summary.rows[0]!['cost_usd']).toBeGreaterThan(0);
    await client.close();
  });
});

describe('/cost in the chat', () => {
  it("prints the session's estimate and the caller's turns today", async () => {
    const home = tempHome();
    chatHomes.push(home);
    writeConfig(
      home,
      'pricing:\n  demo:\n    gatehouse-demo: {input_per_mtok: 1000, output_per_mtok: 4000}\n',
    );
    const run = await runCli(home, ['chat'], { input: 'hello\n/cost\n' });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(
      /this session: ~\$\d+\.\d{4} \(estimated\) · \d+ tokens \(\d+ in, 0 cached, \d+ out\)/,
    );
    const table = await runCli(home, ['sessions']);
    expect(table.stdout).toMatch(/ COST +TITLE\n/);
    expect(table.stdout).toMatch(/ ~\$\d+\.\d{4} +hello\n/);
    expect(run.stdout).toMatch(/your turns today \(UTC\): ~\$\d+\.\d{4} \(estimated\) over 1 turns/);
    // The dashboard's figures too: the last turn's tokens and cost, and how full the context is.
    expect(run.stdout).toMatch(/\nlast turn: ~\$\d+\.\d{4} \(estimated\) · \d+ in, 0 cached, \d+ out\n/);
    expect(run.stdout).toMatch(
      /\ncontext: \d+ of 65536 tokens \(\d+%\) · compression at 49152 \(75%\): \d+ tokens to go\n/,
    );
  });
});
