/**
 * Issue 29: a real Prometheus scrapes the real daemon. Debian's `prometheus` runs with the scrape
 * configuration docs/observability.md shows (the daemon's address, a key file and a one-second
 * interval put in), a few demo-model turns run, and Prometheus' HTTP API answers every Gatehouse
 * series. Prometheus cannot listen on port 0: a free port is found by binding 0 and closing it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { unhandedPort } from '../shared/ports.js';
import { exited, requireBuild } from './cli.js';
import { nextEvent } from './gateway-harness.js';
import { GATEHOUSE_SERIES } from './metrics-fixture.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const PROMETHEUS = process.env['GATEHOUSE_PROMETHEUS'] ?? '/usr/bin/prometheus';
const HAVE_PROMETHEUS = existsSync(PROMETHEUS);
if (!HAVE_PROMETHEUS) {
  process.stderr.write(
    `\n!!! ${PROMETHEUS} is missing: the Prometheus scrape test is SKIPPED.\n` +
      '!!! Install it with: DEBIAN_FRONTEND=noninteractive apt-get install -y prometheus (CI does).\n\n',
  );
}

const KEY_ENV = 'GH_TEST_METRICS_KEY';
const KEY = 'prometheus-scrape-key-0123456789';

beforeAll(requireBuild);

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The scrape configuration docs/observability.md shows, as the docs have it. */
function documentedScrapeConfig(): string {
  const docs = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');
  const block = /<!-- scrape-config -->\n```yaml\n([\s\S]*?)```\n<!-- \/scrape-config -->/.exec(docs);
  if (!block) throw new Error('docs/observability.md has no scrape-config block');
  return block[1]!;
}

type Vector = { metric: Record<string, string>; value: [number, string] }[];

async function query(base: string, promql: string): Promise<Vector> {
  const response = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await response.json()) as { status: string; data: { result: Vector } };
  expect(body.status).toBe('success');
  return body.data.result;
}

/**
 * Asks Prometheus again until `done` holds: it scrapes on its own schedule and tells nobody, so
 * there is no event to wait on. Bounded: after `timeoutMs` the last answer is returned to fail on.
 */
async function until<T>(ask: () => Promise<T>, done: (answer: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const answer = await ask().catch(() => undefined);
    if (answer !== undefined && (done(answer) || Date.now() > end)) return answer;
    if (Date.now() > end) throw new Error('Prometheus never answered');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

describe.skipIf(!HAVE_PROMETHEUS)('Prometheus scraping the daemon', () => {
  // A daemon with a chat platform too (Telegram, on its loopback stand-in), so that the platform
  // engine's series and the delivery ledger's have samples.
  // The chat turns' model is priced (the built-in demo model of local turns is not): both cost series.
  const tg = useTelegramDaemon({
    yaml: [
      'metrics:',
      '  enabled: true',
      `  bearer_key_env: ${KEY_ENV}`,
      'pricing:',
      '  default:',
      '    gatehouse-demo: {input_per_mtok: 1000, output_per_mtok: 4000}',
    ],
  });

  it('returns every Gatehouse series after a few turns', async () => {
    const d = await tg.start({ [KEY_ENV]: KEY });
    cleanups.push(() => tg.stop());

    const dir = mkdtempSync(join(tmpdir(), 'gh-prometheus-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const keyFile = join(dir, 'gatehouse-metrics.key');
    writeFileSync(keyFile, KEY, { mode: 0o600 });
    const config = documentedScrapeConfig()
      .replace('scrape_interval: 15s', 'scrape_interval: 1s')
      .replace("'127.0.0.1:7423'", `'${new URL(d.url).host}'`)
      .replace('/etc/prometheus/gatehouse-metrics.key', keyFile);
    writeFileSync(join(dir, 'prometheus.yml'), config);
    const port = await unhandedPort();
    const prometheus: ChildProcess = spawn(
      PROMETHEUS,
      [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let log = '';
    prometheus.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log += chunk));
    cleanups.push(async () => {
      prometheus.kill('SIGTERM');
      await exited(prometheus);
    });
    const base = `http://127.0.0.1:${port}`;

    const client = await d.connect();
    // A model the provider does not list: labelled `other`, and with no price its calls are unpriced.
    const { session_id } = await client.call<{ session_id: string }>('session.create', {
      cwd: mkdtempSync(join(tmpdir(), 'gh-work-')),
      model: 'unlisted-model',
    });
    await client.call('session.resume', { session_id });
    for (const [i, text] of ['hello', 'run: echo scraped', 'bye'].entries()) {
      const settled = nextEvent(client, 'admission.settled');
      await client.call('prompt.submit', { session_id, submission_id: `p${i}`, text });
      expect((await settled).event).toMatchObject({ outcome: 'completed' });
    }

    const reply = await tg.ask({ id: 871, type: 'private' }, { id: 871, first_name: 'Ola' }, 'hello there');
    expect(reply.length).toBeGreaterThan(0);

    // A scrape after the third settlement: the counter Prometheus stored says 3.
    const turns = await until(
      () => query(base, 'gatehouse_turns_total{engine="local",outcome="completed"}'),
      (v) => v[0]?.value[1] === '3',
    );
    expect(
      turns.map((s) => s.value[1]),
      log,
    ).toEqual(['3']);
    expect((await query(base, 'up{job="gatehouse"}'))[0]?.value[1]).toBe('1');

    const names = new Set(
      (await query(base, 'count by (__name__) ({__name__=~"gatehouse_.+"})')).map(
        (s) => s.metric['__name__'],
      ),
    );
    const missing = GATEHOUSE_SERIES.filter(
      (name) => !names.has(name) && !names.has(`${name}_count`) && !names.has(`${name}_bucket`),
    );
    expect(missing).toEqual([]);
    const platformTurns = await until(
      () => query(base, 'gatehouse_turns_total{engine="platform",outcome="completed"}'),
      (v) => v[0]?.value[1] === '1',
    );
    expect(platformTurns.map((s) => s.value[1])).toEqual(['1']);
    const modelCalls = await query(
      base,
      'sum by (model) (gatehouse_model_call_duration_seconds_count{provider="default"})',
    );
    expect(Object.fromEntries(modelCalls.map((s) => [s.metric['model'], s.value[1]]))).toEqual({
      other: '4',
      'gatehouse-demo': '1',
    });
    const unpriced = await query(
      base,
      'gatehouse_model_calls_unpriced_total{provider="default",model="other"}',
    );
    expect(unpriced[0]?.value[1]).toBe('4');
    // The chat's reply reached the stand-in before the ledger marked it delivered: a scrape between
    // the two still counts it, so wait for one after (a loaded machine widens that window).
    const undelivered = await until(
      () => query(base, 'gatehouse_delivery_undelivered{platform="telegram"}'),
      (v) => v[0]?.value[1] === '0',
    );
    expect(undelivered[0]?.value[1]).toBe('0');
    expect((await query(base, 'nodejs_eventloop_lag_seconds')).length).toBe(1);
    const dollars = await query(base, 'gatehouse_model_cost_usd_total{provider="default"}');
    expect(Number(dollars[0]?.value[1])).toBeGreaterThan(0);
  });
});
