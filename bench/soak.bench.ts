/**
 * Soak (issue 12, item 13): memory of the daemon under steady mixed traffic for `--minutes N`
 * (default 30). Run only when named: `npm run bench -- soak --minutes 30`.
 *
 * Traffic, all at once for the whole run:
 * - 8 conversations driven back to back by 4 long-lived viewers, each submitting its next prompt
 *   when the previous turn completed; the prompts rotate through plain text, a short `run:` and a
 *   `run:` whose output is 1 KiB to 1 MiB (the terminal tool caps what is kept). After 20 turns a
 *   conversation is detached and a fresh session takes its place, so transcripts stay bounded and
 *   what grows is what the daemon keeps per session it has seen, plus any leak;
 * - a passing viewer every second: it connects with a fresh ticket, resumes two conversations,
 *   waits for one event and leaves.
 *
 * RSS (VmRSS of the daemon process) is sampled every 2 s. The warm-up is the first quarter of the
 * run (at most 5 minutes). Baseline: the median RSS of the last 30 s of the warm-up. Figure: the
 * median RSS of the last 10% of the run (at least 30 s), as a ratio to the baseline; aim <= 1.05.
 * The highest sample after the warm-up is reported alongside.
 *
 * Topology: daemon = `gatehouse serve` child (approvals off); demo model = `gatehouse demo-model`
 * child, so neither the model nor the bench's clients count in the daemon's RSS.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import {
  CompletionRouter,
  rssKiB,
  startBenchDaemon,
  startChildDemoModel,
  tempDir,
  type BenchDaemon,
} from './gateway-daemon.js';
import { figure, percentile, type Bench } from './lib.js';

const DRIVERS = 4;
const CONVERSATIONS_PER_DRIVER = 2;
const TURNS_PER_CONVERSATION = 20;
const SAMPLE_MS = 2_000;
const OUTPUT_BYTES = [1024, 16 * 1024, 128 * 1024, 512 * 1024, 1024 * 1024];

function promptFor(n: number): string {
  switch (n % 3) {
    case 0:
      return `hello from the soak, turn ${n}`;
    case 1:
      return `run: echo soak turn ${n}`;
    default:
      return `run: head -c ${OUTPUT_BYTES[n % OUTPUT_BYTES.length]} /dev/zero | tr "\\0" x; echo`;
  }
}

function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    50,
  );
}

interface Sample {
  atMs: number;
  rssKiB: number;
}

/** One viewer that keeps two conversations busy until `until`. Returns how many turns it ran. */
async function drive(daemon: BenchDaemon, cwd: string, until: number, driver: number): Promise<number> {
  const client = await daemon.connect();
  const router = new CompletionRouter(client);
  let turns = 0;
  const conversation = async (slot: number): Promise<void> => {
    while (Date.now() < until) {
      const { session_id } = await client.call<{ session_id: string }>('session.create', { cwd });
      await client.call('session.resume', { session_id });
      for (let t = 0; t < TURNS_PER_CONVERSATION && Date.now() < until; t++) {
        const n = turns++;
        const receipt = await client.call<{ admission_id: string }>('prompt.submit', {
          session_id,
          submission_id: `d${driver}-s${slot}-t${t}`,
          text: promptFor(n + slot),
        });
        await router.completion(receipt.admission_id);
      }
      await client.call('session.detach', { session_id });
    }
  };
  await Promise.all(Array.from({ length: CONVERSATIONS_PER_DRIVER }, (_, slot) => conversation(slot)));
  await client.close();
  return turns;
}

/** Viewers that join, look at two live sessions and leave, one a second, until `until`. */
async function passers(daemon: BenchDaemon, until: number, refused: { count: number }): Promise<number> {
  let joined = 0;
  while (Date.now() < until) {
    let viewer: GatewayClient;
    try {
      viewer = await daemon.connect();
    } catch (error) {
      // A refused ticket or connection is counted, not fatal: a busy daemon may turn one away.
      if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) throw error;
      refused.count++;
      await sleep(1_000);
      continue;
    }
    const { sessions } = await viewer.call<{ sessions: { session_id: string }[] }>('session.list', {
      scope: 'live',
      limit: 50,
    });
    for (const s of sessions.slice(-2)) {
      await viewer.call('session.resume', { session_id: s.session_id }).catch(() => undefined);
    }
    await viewer.close();
    joined++;
    await sleep(1_000);
  }
  return joined;
}

const bench: Bench = {
  name: 'soak',
  onlyWhenNamed: true,
  async run({ quick, minutes }) {
    const totalMs = (minutes ?? (quick ? 2 : 30)) * 60_000;
    const warmupMs = Math.min(5 * 60_000, totalMs / 4);
    const model = await startChildDemoModel();
    const daemon = await startBenchDaemon(
      [
        'model:',
        `  base_url: ${model.baseUrl}`,
        '  model: gatehouse-demo',
        'approvals:',
        '  mode: off',
        '',
      ].join('\n'),
    );
    const cwd = tempDir('gh-soak-cwd-');
    const samples: Sample[] = [];
    const refused = { count: 0 };
    const start = Date.now();
    const until = start + totalMs;
    const sampler = setInterval(() => {
      samples.push({ atMs: Date.now() - start, rssKiB: rssKiB(daemon.pid) });
    }, SAMPLE_MS);
    try {
      const [turns, viewers] = await Promise.all([
        Promise.all(Array.from({ length: DRIVERS }, (_, d) => drive(daemon, cwd, until, d))).then((t) =>
          t.reduce((a, b) => a + b, 0),
        ),
        passers(daemon, until, refused),
      ]);
      clearInterval(sampler);
      const warm = samples.filter((s) => s.atMs <= warmupMs && s.atMs > warmupMs - 30_000);
      const tailMs = Math.max(30_000, totalMs / 10);
      const tail = samples.filter((s) => s.atMs > totalMs - tailMs);
      const after = samples.filter((s) => s.atMs > warmupMs);
      const baseline = median(warm.map((s) => s.rssKiB));
      const end = median(tail.map((s) => s.rssKiB));
      const peak = Math.max(...after.map((s) => s.rssKiB));
      return [
        figure({
          bench: 'soak',
          name: `daemon RSS at the end of a ${totalMs / 60_000}-minute soak (median of last ${Math.round(tailMs / 1000)} s)`,
          value: end,
          unit: 'KiB',
          baseline: { name: 'median RSS of the last 30 s of the warm-up', value: baseline },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 1.05 },
          extra: {
            minutes: totalMs / 60_000,
            warmup_s: Math.round(warmupMs / 1000),
            turns,
            turns_per_s: Number((turns / (totalMs / 1000)).toFixed(1)),
            passing_viewers: viewers,
            passing_viewers_refused: refused.count,
            peak_after_warmup_kib: peak,
            peak_ratio: Number((peak / baseline).toFixed(3)),
            samples: samples.length,
            // The median of each minute, to show the trend and not only its two ends.
            rss_median_per_minute_kib: Array.from({ length: Math.ceil(totalMs / 60_000) }, (_, m) =>
              median(samples.filter((s) => Math.floor(s.atMs / 60_000) === m).map((s) => s.rssKiB)),
            ).join(' '),
          },
        }),
      ];
    } finally {
      clearInterval(sampler);
      await daemon.close();
      await model.close();
    }
  },
};

export default bench;
