/**
 * Memory of large tool outputs (issue 11, "40 sessions with large tool outputs keep hundreds of MB
 * after garbage collection"), on the real daemon in a child process (the allocator environment
 * `gatehouse start` gives it) with the demo model in a process of its own:
 *
 * a round is 40 new local sessions, each attached by a viewer, each running one turn whose terminal
 * tool prints some output (`run: <command>`); then every viewer detaches, housekeeping runs (every
 * second here) and a GC is forced in the daemon through its inspector (HeapProfiler.collectGarbage).
 * The first round prints a line (it also loads and compiles the code a turn needs, a one-off cost);
 * the second prints about 1 MiB per session. RSS (VmRSS) is read before the turns, at its peak
 * (sampled every 50 ms) and after, against the idle daemon's RSS and against the small round's
 * settled RSS in the same run, with the JavaScript heap (process.memoryUsage over the inspector)
 * and the agent cache's counters from runtime.describe.
 */
import { rmSync } from 'node:fs';
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
import { forceGc, heapMiB } from './inspector.js';
import { figure, type Bench, type BenchFigure } from './lib.js';

const NAME = 'large-outputs';
const SESSIONS = 40;
const OUTPUT_BYTES = 1024 * 1024;
/** About 1 MiB of printable lines, from the shell alone. */
const LARGE_COMMAND = `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c ${OUTPUT_BYTES}`;

async function settledRss(daemon: BenchDaemon): Promise<number> {
  await forceGc(daemon);
  await sleep(1500); // two housekeeping passes
  await forceGc(daemon);
  return rssKiB(daemon.pid);
}

interface Round {
  before: number;
  peak: number;
  after: number;
  heap: Record<string, number>;
}

/** One round: SESSIONS sessions attached, a turn each running `command`, detached, settled. */
async function round(
  daemon: BenchDaemon,
  viewers: GatewayClient[],
  command: string,
  tag: string,
): Promise<Round> {
  const routers = viewers.map((v) => new CompletionRouter(v));
  const cwd = tempDir('gh-bench-large-');
  const ids: string[] = [];
  for (let i = 0; i < SESSIONS; i++) {
    const viewer = viewers[i % viewers.length]!;
    const created = await viewer.call<{ session_id: string }>('session.create', { cwd, yolo: true });
    await viewer.call('session.resume', { session_id: created.session_id });
    ids.push(created.session_id);
  }
  const before = await settledRss(daemon);
  let peak = before;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rssKiB(daemon.pid));
      await sleep(50);
    }
  })();
  await Promise.all(
    ids.map(async (id, i) => {
      const receipt = await viewers[i % viewers.length]!.call<{ admission_id: string }>('prompt.submit', {
        session_id: id,
        submission_id: `${tag}-${i}`,
        text: `run: ${command}`,
      });
      await routers[i % viewers.length]!.completion(receipt.admission_id);
    }),
  );
  sampling = false;
  await sampler;
  peak = Math.max(peak, rssKiB(daemon.pid));
  for (const [i, id] of ids.entries()) {
    await viewers[i % viewers.length]!.call('session.detach', { session_id: id });
  }
  const after = await settledRss(daemon);
  rmSync(cwd, { recursive: true, force: true });
  return { before, peak, after, heap: await heapMiB(daemon) };
}

const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
const prefixed = (prefix: string, values: Record<string, number>) =>
  Object.fromEntries(Object.entries(values).map(([k, v]) => [`${prefix}${k}`, v]));

const bench: Bench = {
  name: NAME,
  async run() {
    const model = await startChildDemoModel();
    const config = [
      'model:',
      `  base_url: ${model.baseUrl}`,
      '  model: gatehouse-demo',
      'housekeeping:',
      '  interval_s: 1',
      '',
    ].join('\n');
    const daemon = await startBenchDaemon(config, undefined, ['--inspect=127.0.0.1:0']);
    try {
      await sleep(500);
      const idle = await settledRss(daemon);
      const idleHeap = await heapMiB(daemon);
      const viewers = await Promise.all(Array.from({ length: 4 }, () => daemon.connect()));
      const small = await round(daemon, viewers, 'echo small', 'small');
      const large = await round(daemon, viewers, LARGE_COMMAND, 'large');
      const again = await round(daemon, viewers, LARGE_COMMAND, 'again');
      const samples: number[] = [];
      for (let s = 0; s < 5; s++) {
        await sleep(1000);
        samples.push(rssKiB(daemon.pid));
      }
      const describe = await viewers[0]!.call<{ agent_cache?: Record<string, unknown> }>('runtime.describe');
      const cache = describe.agent_cache ?? {};
      const evictions = (cache['evictions'] ?? {}) as Record<string, number>;
      const counters: Record<string, number> = {
        cached_agents: Number(cache['size'] ?? 0),
        cache_hits: Number(cache['hits'] ?? 0),
        cache_misses: Number(cache['misses'] ?? 0),
        cached_kib: Math.round(Number(cache['bytes'] ?? 0) / 1024),
        ...prefixed('evictions_', evictions),
      };
      const idleBaseline = { name: 'idle daemon', value: mib(idle) };
      const smallBaseline = { name: 'after the 1-line round', value: mib(small.after) };
      const figures: BenchFigure[] = [
        figure({
          bench: NAME,
          name: `RSS after ${SESSIONS} sessions ran a 1-line tool turn, detached, GC`,
          value: mib(small.after),
          unit: 'MiB',
          baseline: idleBaseline,
          higherIsBetter: false,
          extra: {
            before_mib: mib(small.before),
            peak_mib: mib(small.peak),
            ...prefixed('idle_', idleHeap),
            ...small.heap,
          },
        }),
        figure({
          bench: NAME,
          name: `peak RSS while ${SESSIONS} turns print 1 MiB each`,
          value: mib(large.peak),
          unit: 'MiB',
          baseline: idleBaseline,
          higherIsBetter: false,
          extra: { before_mib: mib(large.before) },
        }),
        figure({
          bench: NAME,
          name: `RSS after ${SESSIONS} sessions printed 1 MiB each, detached, GC (vs idle)`,
          value: mib(large.after),
          unit: 'MiB',
          baseline: idleBaseline,
          higherIsBetter: false,
        }),
        figure({
          bench: NAME,
          name: `RSS after ${SESSIONS} sessions printed 1 MiB each, detached, GC (vs 1-line round)`,
          value: mib(large.after),
          unit: 'MiB',
          baseline: smallBaseline,
          higherIsBetter: false,
          // 40 MiB of tool output went through; what stays is a small part of it.
          aim: { op: '<=', ratio: 1.15 },
          extra: {
            ...large.heap,
            output_through_daemon_mib: (SESSIONS * OUTPUT_BYTES) / 2 ** 20,
          },
        }),
        figure({
          bench: NAME,
          name: `RSS after ${SESSIONS} more sessions printed 1 MiB each (vs the first 1 MiB round)`,
          value: mib(again.after),
          unit: 'MiB',
          baseline: { name: 'after the first 1 MiB round', value: mib(large.after) },
          higherIsBetter: false,
          // Nothing is kept per session (the JavaScript heap stays flat); what grows is SQLite's page
          // cache filling towards its 64 MiB cap with the new transcripts' pages (docs/agent-cache.md).
          aim: { op: '<=', ratio: 1.1 },
          // The agent cache's counters after all three rounds (120 sessions).
          extra: {
            peak_mib: mib(again.peak),
            ...again.heap,
            rss_5s_later_mib: mib(Math.max(...samples)),
            ...counters,
          },
        }),
      ];
      return figures;
    } finally {
      await daemon.close();
      await model.close();
    }
  },
};

export default bench;
