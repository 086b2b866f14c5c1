/**
 * Soak (issue 12, item 13): memory of the daemon under steady mixed traffic for `--minutes N`
 * (default 30). Run only when named: `npm run bench -- soak --minutes 30`.
 *
 * Traffic, all at once for the whole run:
 * - 8 conversations driven by 4 long-lived viewers at a fixed pace of TURNS_PER_S turns started
 *   per second in all (a late turn starts at once, lost slots are not made up); the prompts rotate
 *   through plain text, a short `run:` and a `run:` whose output is 1 KiB to 1 MiB (the terminal
 *   tool keeps 64 KiB of it). After 10 turns a conversation is detached and a fresh session takes
 *   its place (the first session of each is shorter by its place, so they detach one after
 *   another), so transcripts stay bounded and what grows is what the daemon keeps per session it
 *   has seen, plus any leak;
 * - a passing viewer every second: it connects with a fresh ticket, lists the live sessions,
 *   resumes two and leaves.
 *
 * Bounded caches are given bounds they reach inside the warm-up, so the figure shows memory that
 * grows past every bound: `agent_cache.idle_ttl_s: 120` (the default hour would still be filling
 * at minute 30, up to 128 sessions, which the agent-cache bench measures) and
 * `store.sqlite_cache_mb: 4` (the default 64 MiB page cache fills as fast as the database grows,
 * about 1 MiB a minute here). The warm-up lasts until both reached their steady state (see run()).
 *
 * Sampled every 2 s: VmRSS of the daemon, split by mapping (/proc/<pid>/smaps: malloc's main
 * heap, anonymous, files), the database's size and the agent cache's (gateway.json); once a
 * minute a GC is forced in the daemon over its inspector and process.memoryUsage() read. Baseline:
 * the median RSS of the first 10% of the run after the warm-up; figure: the median RSS of the last
 * 10% (each at least 30 s), as a ratio to the baseline; aim <= 1.05. The peak after the warm-up and
 * each minute's medians are reported alongside, and a line a minute is written on stderr.
 *
 * Topology: daemon = `gatehouse serve` child (approvals off); demo model = `gatehouse demo-model`
 * child, so neither the model nor the bench's clients count in the daemon's RSS.
 */
import { readFileSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { homeLayout } from '../src/daemon/home.js';
import type { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import {
  CompletionRouter,
  rssKiB,
  startBenchDaemon,
  startChildDemoModel,
  tempDir,
  type BenchDaemon,
} from './gateway-daemon.js';
import { forceGc, heapMiB } from './inspector.js';
import { figure, percentile, type Bench } from './lib.js';
import { residentBreakdown, type ResidentBreakdown } from './proc-memory.js';

const DRIVERS = 4;
const CONVERSATIONS_PER_DRIVER = 2;
const TURNS_PER_CONVERSATION = 10;
const SAMPLE_MS = 2_000;
const CACHE_TTL_S = 120;
/**
 * Turns started per second, all conversations together: a fixed pace, so what the daemon holds at
 * any moment (turns in flight, outputs being read, sessions detached within the cache's TTL) does
 * not follow the load other jobs put on the machine. Below what a loaded 2-core machine completes.
 */
const TURNS_PER_S = 0.5;
/**
 * SQLite's page cache bound for the soak (`store.sqlite_cache_mb`; the daemon's default is 64).
 * The cache keeps the pages written and read until it holds this much, then stays: it fills as
 * fast as the database grows (about 1 MiB a minute here), so at 64 MiB it would still be filling
 * at minute 30. At 4 MiB it is full inside the warm-up, and the figure shows what grows past it.
 */
const PAGE_CACHE_MIB = 4;
/** The warm-up is never shorter than this: V8 gives back its start-up heap in the first minutes. */
const MIN_WARMUP_MS = 3 * 60_000;
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
  /** Resident memory by kind of mapping (smaps). */
  resident: ResidentBreakdown | null;
  /** The state database, in KiB: what SQLite's page cache can at most hold of it. */
  dbKiB: number;
  /** Turns started so far. */
  turns: number;
  /** The agent cache's entries and estimated bytes, as the daemon last advertised them. */
  cache: { size: number; bytes: number } | null;
}

/** The agent cache's counters from the daemon's gateway.json (refreshed by each housekeeping pass). */
function agentCache(daemon: BenchDaemon): Sample['cache'] {
  try {
    const info = JSON.parse(readFileSync(homeLayout(daemon.home).gatewayJson, 'utf8')) as {
      agent_cache?: { size: number; bytes: number };
    };
    return info.agent_cache ? { size: info.agent_cache.size, bytes: info.agent_cache.bytes } : null;
  } catch {
    return null; // being rewritten at this instant
  }
}

/**
 * The size of the profile's state database, in KiB: the pages SQLite's page cache may hold. The
 * log (WAL) is left out: it rewrites the same pages, and the daemon's checkpointer copies it into
 * the database every 100 ms, so the file's size is current.
 */
function databaseKiB(daemon: BenchDaemon): number {
  try {
    return Math.round(statSync(homeLayout(daemon.home).stateDb('default')).size / 1024);
  } catch {
    return 0; // not created yet
  }
}

/**
 * Hands out turn starts at `perSecond`, all conversations together. A conversation that is late
 * starts at once but does not make up for lost slots, so a slow minute is not followed by a burst.
 */
class Pacer {
  private nextAt = Date.now();
  started = 0;
  constructor(private readonly perSecond: number) {}

  async slot(): Promise<void> {
    const at = Math.max(Date.now(), this.nextAt);
    this.nextAt = at + 1000 / this.perSecond;
    const wait = at - Date.now();
    if (wait > 0) await sleep(wait);
    this.started++;
  }
}

function mib(kib: number): number {
  return Math.round((kib / 1024) * 10) / 10;
}

/** Turns started in each minute. */
function turnsPerMinute(samples: Sample[], minutes: number): string {
  let before = 0;
  return Array.from({ length: minutes }, (_, m) => {
    const inMinute = samples.filter((s) => Math.floor(s.atMs / 60_000) === m);
    const last = inMinute.at(-1)?.turns ?? before;
    const count = last - before;
    before = last;
    return count;
  }).join(' ');
}

/**
 * When every bounded cache reached its steady state: the page cache is full once the database grew
 * by its bound (every page written passes through it), the agent cache one TTL after every
 * conversation's first session detached (`cycledAtMs`); and MIN_WARMUP_MS at least. Infinity
 * while either has not happened.
 */
export function steadyState(
  samples: readonly Pick<Sample, 'atMs' | 'dbKiB'>[],
  cycledAtMs: number | null,
): { steadyAtMs: number; pageCacheFullAtMs: number } {
  const first = samples[0]?.dbKiB ?? 0;
  const pageCacheFullAtMs = samples.find((s) => s.dbKiB - first >= PAGE_CACHE_MIB * 1024)?.atMs ?? Infinity;
  const agentCacheSteadyAtMs = cycledAtMs === null ? Infinity : cycledAtMs + CACHE_TTL_S * 1000;
  return { steadyAtMs: Math.max(MIN_WARMUP_MS, pageCacheFullAtMs, agentCacheSteadyAtMs), pageCacheFullAtMs };
}

/** One line on stderr per minute of the run, so a long soak can be followed (and read if it dies). */
function progress(
  samples: Sample[],
  heaps: { atMs: number; heap: Record<string, number> }[],
  minute: number,
): void {
  const inMinute = samples.filter((s) => Math.floor(s.atMs / 60_000) === minute - 1);
  const med = (value: (s: Sample) => number) => median(inMinute.map(value));
  const withResident = inMinute.filter((s) => s.resident);
  const part = (value: (r: ResidentBreakdown) => number) =>
    withResident.length ? mib(median(withResident.map((s) => value(s.resident!)))) : NaN;
  const heap = heaps.at(-1)?.heap ?? {};
  process.stderr.write(
    `soak minute ${minute}: rss ${mib(med((s) => s.rssKiB))} MiB (malloc heap ${part((r) => r.mallocHeapKiB)}, ` +
      `anon ${part((r) => r.anonKiB)}, file ${part((r) => r.fileKiB)}), js heap ${heap['heap_used_mib']}/` +
      `${heap['heap_total_mib']} MiB, external ${heap['external_mib']}, db ${mib(med((s) => s.dbKiB))} MiB, ` +
      `agent cache ${inMinute.at(-1)?.cache?.size ?? '?'} entries, turns ${inMinute.at(-1)?.turns ?? '?'}\n`,
  );
}

/** Median of each minute of `values` taken at `atMs`, joined for the report. */
function perMinute<T extends { atMs: number }>(items: T[], minutes: number, value: (t: T) => number): string {
  return Array.from({ length: minutes }, (_, m) =>
    median(items.filter((s) => Math.floor(s.atMs / 60_000) === m).map(value)),
  ).join(' ');
}

/** One viewer that keeps two conversations busy until `until`. Returns how many turns it ran. */
async function drive(
  daemon: BenchDaemon,
  cwd: string,
  until: number,
  driver: number,
  pacer: Pacer,
  firstSessionDetached: () => void,
): Promise<number> {
  const client = await daemon.connect();
  const router = new CompletionRouter(client);
  let turns = 0;
  const conversation = async (slot: number): Promise<void> => {
    // The first session of each conversation is shorter by its place among all of them, so the
    // conversations detach one after another, not all at once: their transcripts (which the agent
    // cache holds) then add up to the same total at any moment, instead of a saw tooth whose phase
    // would decide the figure.
    const place = driver * CONVERSATIONS_PER_DRIVER + slot + 1;
    let length = Math.ceil((place * TURNS_PER_CONVERSATION) / (DRIVERS * CONVERSATIONS_PER_DRIVER));
    let first = true;
    while (Date.now() < until) {
      const { session_id } = await client.call<{ session_id: string }>('session.create', { cwd });
      await client.call('session.resume', { session_id });
      for (let t = 0; t < length && Date.now() < until; t++) {
        await pacer.slot();
        if (Date.now() >= until) break;
        const n = turns++;
        const receipt = await client.call<{ admission_id: string }>('prompt.submit', {
          session_id,
          submission_id: `d${driver}-s${slot}-t${t}`,
          text: promptFor(n + slot),
        });
        await router.completion(receipt.admission_id);
      }
      await client.call('session.detach', { session_id });
      if (first && Date.now() < until) firstSessionDetached();
      first = false;
      length = TURNS_PER_CONVERSATION;
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
    const model = await startChildDemoModel();
    const daemon = await startBenchDaemon(
      [
        'model:',
        `  base_url: ${model.baseUrl}`,
        '  model: gatehouse-demo',
        'approvals:',
        '  mode: off',
        'agent_cache:',
        `  idle_ttl_s: ${CACHE_TTL_S}`,
        'store:',
        `  sqlite_cache_mb: ${PAGE_CACHE_MIB}`,
        '',
      ].join('\n'),
      undefined,
      ['--inspect=127.0.0.1:0'],
    );
    const cwd = tempDir('gh-soak-cwd-');
    const samples: Sample[] = [];
    const refused = { count: 0 };
    const start = Date.now();
    const until = start + totalMs;
    const heaps: { atMs: number; heap: Record<string, number> }[] = [];
    const pacer = new Pacer(TURNS_PER_S);
    // When every conversation's first (staggered) session has detached: from then on the live
    // transcripts are spread over every length, and one TTL later so are the detached ones cached.
    let firstSessionsDetached = 0;
    const cycled: { atMs: number | null } = { atMs: null };
    const firstSessionDetached = () => {
      if (++firstSessionsDetached === DRIVERS * CONVERSATIONS_PER_DRIVER) cycled.atMs = Date.now() - start;
    };
    let reported = 0;
    const sampler = setInterval(() => {
      let resident: ResidentBreakdown | null = null;
      try {
        resident = residentBreakdown(daemon.pid);
      } catch {
        // smaps unreadable at this instant: VmRSS alone
      }
      samples.push({
        atMs: Date.now() - start,
        rssKiB: rssKiB(daemon.pid),
        resident,
        dbKiB: databaseKiB(daemon),
        turns: pacer.started,
        cache: agentCache(daemon),
      });
      const minute = Math.floor(samples.at(-1)!.atMs / 60_000);
      if (minute > reported) progress(samples, heaps, (reported = minute));
    }, SAMPLE_MS);
    const heapReader = setInterval(() => {
      void forceGc(daemon)
        .then(() => heapMiB(daemon))
        .then((heap) => heaps.push({ atMs: Date.now() - start, heap }))
        .catch(() => undefined); // a missed reading is a gap in the report, not a failed run
    }, 60_000);
    try {
      const [turns, viewers] = await Promise.all([
        Promise.all(
          Array.from({ length: DRIVERS }, (_, d) =>
            drive(daemon, cwd, until, d, pacer, firstSessionDetached),
          ),
        ).then((t) => t.reduce((a, b) => a + b, 0)),
        passers(daemon, until, refused),
      ]);
      clearInterval(sampler);
      clearInterval(heapReader);
      // The warm-up lasts until every bounded cache reached its steady state (steadyState). If
      // that takes more than half the run, the second half is measured and said so.
      const { steadyAtMs, pageCacheFullAtMs } = steadyState(samples, cycled.atMs);
      const warmupMs = Math.min(steadyAtMs, totalMs / 2);
      // Both ends are medians over the same length of time (10% of the run, at least 30 s): RSS
      // swings by tens of MiB as the 1 MiB outputs come and go, so a shorter window reads a swing.
      const windowMs = Math.max(30_000, totalMs / 10);
      const warm = samples.filter((s) => s.atMs > warmupMs && s.atMs <= warmupMs + windowMs);
      const tail = samples.filter((s) => s.atMs > totalMs - windowMs);
      const after = samples.filter((s) => s.atMs > warmupMs);
      const baseline = median(warm.map((s) => s.rssKiB));
      const end = median(tail.map((s) => s.rssKiB));
      const peak = Math.max(...after.map((s) => s.rssKiB));
      const minutesRun = Math.ceil(totalMs / 60_000);
      const withResident = samples.filter((s) => s.resident);
      return [
        figure({
          bench: 'soak',
          name: `daemon RSS at the end of a ${totalMs / 60_000}-minute soak (median of last ${Math.round(windowMs / 1000)} s)`,
          value: end,
          unit: 'KiB',
          baseline: {
            name: `median RSS of the ${Math.round(windowMs / 1000)} s after the warm-up`,
            value: baseline,
          },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 1.05 },
          extra: {
            minutes: totalMs / 60_000,
            warmup_s: Math.round(warmupMs / 1000),
            warmup_reached_steady_state: steadyAtMs <= totalMs / 2 ? 'yes' : 'no',
            page_cache_full_at_s: Number.isFinite(pageCacheFullAtMs)
              ? Math.round(pageCacheFullAtMs / 1000)
              : 'never',
            agent_cache_steady_at_s:
              cycled.atMs === null ? 'never' : Math.round(cycled.atMs / 1000 + CACHE_TTL_S),
            sqlite_cache_mb: PAGE_CACHE_MIB,
            turns,
            turns_per_s: Number((turns / (totalMs / 1000)).toFixed(1)),
            passing_viewers: viewers,
            passing_viewers_refused: refused.count,
            peak_after_warmup_kib: peak,
            peak_ratio: Number((peak / baseline).toFixed(3)),
            samples: samples.length,
            agent_cache_ttl_s: CACHE_TTL_S,
            turns_per_s_paced: TURNS_PER_S,
            // The median of each minute, to show the trend and not only its two ends.
            rss_median_per_minute_kib: perMinute(samples, minutesRun, (s) => s.rssKiB),
            agent_cache_entries_per_minute: perMinute(
              samples.filter((s) => s.cache),
              minutesRun,
              (s) => s.cache!.size,
            ),
            agent_cache_mib_per_minute: perMinute(
              samples.filter((s) => s.cache),
              minutesRun,
              (s) => Math.round((s.cache!.bytes / 2 ** 20) * 10) / 10,
            ),
            // After a forced GC, once a minute: the live JavaScript heap, what V8 holds for it, and
            // the memory outside it that JavaScript objects own (Buffers, ArrayBuffers).
            live_js_heap_mib_per_minute: heaps.map((h) => h.heap['heap_used_mib']).join(' '),
            js_heap_total_mib_per_minute: heaps.map((h) => h.heap['heap_total_mib']).join(' '),
            external_mib_per_minute: heaps.map((h) => h.heap['external_mib']).join(' '),
            array_buffers_mib_per_minute: heaps.map((h) => h.heap['array_buffers_mib']).join(' '),
            // RSS by kind of mapping (medians per minute, MiB): malloc's main heap, anonymous
            // mappings (V8's heap, other arenas, large blocks), file mappings.
            malloc_heap_mib_per_minute: perMinute(withResident, minutesRun, (s) =>
              mib(s.resident!.mallocHeapKiB),
            ),
            anon_mib_per_minute: perMinute(withResident, minutesRun, (s) => mib(s.resident!.anonKiB)),
            file_mib_per_minute: perMinute(withResident, minutesRun, (s) => mib(s.resident!.fileKiB)),
            database_mib_per_minute: perMinute(samples, minutesRun, (s) => mib(s.dbKiB)),
            turns_started_per_minute: turnsPerMinute(samples, minutesRun),
          },
        }),
      ];
    } finally {
      clearInterval(sampler);
      clearInterval(heapReader);
      await daemon.close();
      await model.close();
    }
  },
};

export default bench;
