/**
 * Issue 29, metrics: `/metrics` through the real daemon. After demo-model turns every series
 * docs/observability.md lists is served, with the values those turns imply, on both stores; access
 * is loopback-only without a key and needs the bearer key with one; with metrics off the route is
 * 404 (and prom-client is not loaded: lean-startup.test.ts).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuild, runCli, tempHome, isOneLineError } from './cli.js';
import {
  BACKENDS,
  dropTestSchemas,
  nextEvent,
  startDaemon,
  writeConfig,
  type RunningDaemon,
} from './gateway-harness.js';
import { declaredNames, GATEHOUSE_SERIES, parseMetrics, total } from './metrics-fixture.js';
import { useTelegramDaemon } from './telegram-fixture.js';

beforeAll(requireBuild);

const running: RunningDaemon[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((d) => d.stop()));
  await dropTestSchemas();
});

const KEY_ENV = 'GH_TEST_METRICS_KEY';
const KEY = 'a-scrape-key-of-some-length';

async function scrape(url: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${url}/metrics`, { headers });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

describe.each(BACKENDS)('/metrics on %s', (store) => {
  it('serves every series, with the values of the turns taken', async () => {
    // A short verbatim tail, so that three turns leave something to compress.
    const d = await startDaemon({
      store,
      config: 'metrics:\n  enabled: true\ncompression:\n  tail_tokens: 50\n',
    });
    running.push(d);
    const client = await d.connect();
    const { session_id } = await client.call<{ session_id: string }>('session.create', {
      cwd: mkdtempSync(join(tmpdir(), 'gh-work-')),
    });
    await client.call('session.resume', { session_id });
    for (const [i, text] of ['hello', 'run: echo metrics', 'bye'].entries()) {
      // Settled (not only completed): the settlement is what the turn counters count.
      const settled = nextEvent(client, 'admission.settled');
      await client.call('prompt.submit', { session_id, submission_id: `s${i}`, text });
      expect((await settled).event).toMatchObject({ outcome: 'completed' });
    }

    // A compression asked for now (the demo model writes the summary).
    const compressed = await client.call<{ compressed: boolean }>('session.compress', { session_id });
    expect(compressed.compressed).toBe(true);

    const served = await scrape(d.url);
    expect(served.status).toBe(200);
    expect(served.type).toContain('text/plain');
    const declared = declaredNames(served.text);
    expect(GATEHOUSE_SERIES.filter((name) => !declared.includes(name))).toEqual([]);
    // Event-loop delay comes with prom-client's process metrics.
    expect(declared).toContain('nodejs_eventloop_lag_seconds');

    const samples = parseMetrics(served.text);
    expect(total(samples, 'gatehouse_turns_total', { engine: 'local', outcome: 'completed' })).toBe(3);
    expect(total(samples, 'gatehouse_admissions_total', { engine: 'local' })).toBe(3);
    expect(total(samples, 'gatehouse_turn_duration_seconds_count', { engine: 'local' })).toBe(3);
    expect(total(samples, 'gatehouse_turn_duration_seconds_sum', { engine: 'local' })).toBeGreaterThan(0);
    // The tool turn makes two model calls, the compression one (its summary); the demo model is the
    // provider `demo`.
    const calls = { provider: 'demo', model: 'gatehouse-demo', result: 'ok' };
    expect(total(samples, 'gatehouse_model_call_duration_seconds_count', calls)).toBe(5);
    const tokens = { provider: 'demo', model: 'gatehouse-demo' };
    expect(total(samples, 'gatehouse_model_tokens_total', { ...tokens, kind: 'input' })).toBeGreaterThan(0);
    expect(total(samples, 'gatehouse_model_tokens_total', { ...tokens, kind: 'output' })).toBeGreaterThan(0);
    // The built-in demo model has no price and reports no cost: every call is unpriced.
    expect(total(samples, 'gatehouse_model_calls_unpriced_total', tokens)).toBe(5);
    expect(total(samples, 'gatehouse_model_cost_usd_total')).toBe(0);
    expect(
      total(samples, 'gatehouse_store_commit_duration_seconds_count', { backend: store }),
    ).toBeGreaterThan(0);
    expect(total(samples, 'gatehouse_queue_depth', { engine: 'local' })).toBe(0);
    expect(total(samples, 'gatehouse_sessions_live')).toBe(1);
    expect(total(samples, 'gatehouse_viewers')).toBe(1);
    expect(total(samples, 'gatehouse_connections')).toBe(1);
    // The compression replaced the transcript: the cached agent was dropped.
    expect(total(samples, 'gatehouse_agent_cache_entries')).toBe(0);
    expect(total(samples, 'gatehouse_agent_cache_bytes')).toBe(0);
    expect(total(samples, 'gatehouse_agent_cache_evictions_total', { cause: 'invalidated' })).toBe(1);
    expect(total(samples, 'gatehouse_approvals_waiting')).toBe(0);
    expect(total(samples, 'gatehouse_approval_oldest_age_seconds')).toBe(0);
    expect(total(samples, 'gatehouse_recoveries_total')).toBe(0);
    expect(total(samples, 'gatehouse_compressions_total', { engine: 'local', result: 'done' })).toBe(1);
    expect(total(samples, 'gatehouse_cluster_leases_held')).toBe(0);
    // No label carries a session id or the prompt's text.
    expect(served.text).not.toContain(session_id);
    expect(served.text).not.toContain('echo metrics');
  });
});

describe('an approval across a crash', () => {
  it('is waiting before and after, and the restart counts the turn it resumed', async () => {
    // A turn waits on the approval at the end: the stop after the test does not wait long for it.
    const first = await startDaemon({ config: 'metrics:\n  enabled: true\ndrain_timeout_s: 1\n' });
    running.push(first);
    const client = await first.connect();
    const cwd = mkdtempSync(join(tmpdir(), 'gh-work-'));
    const { session_id } = await client.call<{ session_id: string }>('session.create', { cwd });
    await client.call('session.resume', { session_id });
    const asked = nextEvent(client, 'approval.request');
    await client.call('prompt.submit', { session_id, submission_id: 'a1', text: `run: rm -rf ${cwd}/gone` });
    await asked;
    // A second prompt waits behind the turn held by its approval.
    await client.call('prompt.submit', { session_id, submission_id: 'a2', text: 'behind it' });
    const before = parseMetrics((await scrape(first.url)).text);
    expect(total(before, 'gatehouse_queue_depth', { engine: 'local' })).toBe(1);
    expect(total(before, 'gatehouse_approvals_waiting', { engine: 'local' })).toBe(1);
    expect(total(before, 'gatehouse_turns_running')).toBe(1);
    const ageBefore = total(before, 'gatehouse_approval_oldest_age_seconds', { engine: 'local' });
    expect(ageBefore).toBeGreaterThanOrEqual(0);

    await first.kill();
    const second = await startDaemon({ home: first.home });
    running.push(second);
    // The resumed turn asks again once it reaches the command (after ready): wait for the question.
    const viewer = await second.connect();
    const reasked = nextEvent(viewer, 'approval.request').catch(() => null);
    const snap = await viewer.call<{ prompts: unknown[] }>('session.resume', { session_id });
    if (snap.prompts.length === 0) expect(await reasked).not.toBeNull();
    const after = parseMetrics((await scrape(second.url)).text);
    expect(total(after, 'gatehouse_recoveries_total', { engine: 'local', result: 'resumed' })).toBe(1);
    expect(total(after, 'gatehouse_recoveries_total', { engine: 'local', result: 'unknown' })).toBe(0);
    // The prompt is asked again with its first time: its age goes on from before the crash.
    expect(total(after, 'gatehouse_approvals_waiting', { engine: 'local' })).toBe(1);
    expect(total(after, 'gatehouse_queue_depth', { engine: 'local' })).toBe(1);
    expect(total(after, 'gatehouse_approval_oldest_age_seconds', { engine: 'local' })).toBeGreaterThan(
      ageBefore,
    );
  });
});

describe('a chat-platform turn', () => {
  const tg = useTelegramDaemon({ yaml: ['metrics:', '  enabled: true'] });

  it('counts in the platform engine, and the delivery ledger shows nothing owed once it is sent', async () => {
    const d = await tg.start();
    running.push(d);
    const reply = await tg.ask({ id: 4242, type: 'private' }, { id: 4242, first_name: 'Ines' }, 'hi metrics');
    expect(reply.length).toBeGreaterThan(0);
    const samples = parseMetrics((await scrape(d.url)).text);
    expect(total(samples, 'gatehouse_admissions_total', { engine: 'platform' })).toBe(1);
    expect(total(samples, 'gatehouse_turns_total', { engine: 'platform', outcome: 'completed' })).toBe(1);
    expect(total(samples, 'gatehouse_turn_duration_seconds_count', { engine: 'platform' })).toBe(1);
    expect(total(samples, 'gatehouse_model_call_duration_seconds_count', { provider: 'default' })).toBe(1);
    expect(samples.filter((s) => s.name === 'gatehouse_delivery_undelivered')).toEqual([
      { name: 'gatehouse_delivery_undelivered', labels: { platform: 'telegram' }, value: 0 },
    ]);
    expect(total(samples, 'gatehouse_queue_depth', { engine: 'platform' })).toBe(0);
  });
});

describe('who may scrape', () => {
  it('without a key: loopback peers only, not a request a proxy relays; metrics off: 404', async () => {
    const d = await startDaemon({ config: 'metrics:\n  enabled: true\n' });
    running.push(d);
    expect((await scrape(d.url)).status).toBe(200);
    const relayed = await scrape(d.url, { 'x-forwarded-for': '203.0.113.7' });
    expect(relayed.status).toBe(403);
    expect(JSON.parse(relayed.text)).toMatchObject({ error: { reason: 'remote_denied' } });

    const off = await startDaemon();
    running.push(off);
    expect((await scrape(off.url)).status).toBe(404);
  });

  it('with metrics.bearer_key_env: only a scrape presenting the key', async () => {
    const d = await startDaemon({
      config: `metrics:\n  enabled: true\n  bearer_key_env: ${KEY_ENV}\n`,
      env: { [KEY_ENV]: KEY },
    });
    running.push(d);
    const missing = await scrape(d.url);
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.text)).toMatchObject({ error: { reason: 'missing' } });
    const wrong = await scrape(d.url, { authorization: 'Bearer not-the-key-at-all' });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.text)).toMatchObject({ error: { reason: 'forged' } });
    const right = await scrape(d.url, { authorization: `Bearer ${KEY}` });
    expect(right.status).toBe(200);
    expect(right.text).toContain('gatehouse_turns_total');
  });

  it('a key variable named but not set stops the start with one line naming it', async () => {
    const home = tempHome();
    writeConfig(home, `metrics:\n  enabled: true\n  bearer_key_env: ${KEY_ENV}\n`);
    const run = await runCli(home, ['serve', '--port', '0'], { env: { [KEY_ENV]: '' } });
    expect(run.code).not.toBe(0);
    expect(isOneLineError(run.stderr)).toBe(true);
    expect(run.stderr).toContain(`metrics.bearer_key_env names $${KEY_ENV}, which is not set`);
  });
});
