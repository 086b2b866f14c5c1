/**
 * Memory of large tool outputs (issue 11, "40 sessions with large tool outputs keep hundreds of MB
 * after garbage collection"), on the real daemon in a child process (the allocator environment
 * `gatehouse start` gives it) with the demo model in a process of its own:
 *
 * 40 local sessions each run one turn whose terminal tool prints about 1 MiB (`run: <command>`),
 * every viewer attached meanwhile; then all viewers detach, housekeeping runs (every second here),
 * and a GC is forced in the daemon through its inspector (HeapProfiler.collectGarbage). RSS
 * (VmRSS) is read before the turns, at its peak (sampled every 50 ms) and after, each against the
 * idle daemon's RSS in the same run, with the agent cache's counters from runtime.describe.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import type { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import {
  CompletionRouter,
  rssKiB,
  startBenchDaemon,
  startChildDemoModel,
  tempDir,
  type BenchDaemon,
} from './gateway-daemon.js';
import { figure, type Bench, type BenchFigure } from './lib.js';

const NAME = 'large-outputs';
const SESSIONS = 40;
const OUTPUT_BYTES = 1024 * 1024;
/** About 1 MiB of printable lines, from the shell alone. */
const COMMAND = `yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c ${OUTPUT_BYTES}`;

/** Forces a full GC in the daemon over its inspector (Chrome DevTools Protocol). */
async function forceGc(daemon: BenchDaemon): Promise<void> {
  const match = /Debugger listening on (ws:\/\/\S+)/.exec(daemon.stderr());
  if (!match) throw new Error(`the daemon's inspector did not start: ${daemon.stderr()}`);
  const socket = new WebSocket(match[1]!);
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  for (let id = 1; id <= 3; id++) {
    await new Promise<void>((resolve, reject) => {
      socket.on('message', function onMessage(data) {
        const reply = JSON.parse(String(data)) as { id?: number };
        if (reply.id !== id) return;
        socket.off('message', onMessage);
        resolve();
      });
      socket.once('error', reject);
      socket.send(JSON.stringify({ id, method: 'HeapProfiler.collectGarbage' }));
    });
  }
  socket.close();
}

async function settledRss(daemon: BenchDaemon): Promise<number> {
  await forceGc(daemon);
  await sleep(1500); // two housekeeping passes
  await forceGc(daemon);
  return rssKiB(daemon.pid);
}

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
    const cwd = tempDir('gh-bench-large-');
    try {
      await sleep(500);
      const idle = await settledRss(daemon);
      const viewers: GatewayClient[] = await Promise.all(Array.from({ length: 4 }, () => daemon.connect()));
      const routers = viewers.map((v) => new CompletionRouter(v));
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
          const viewer = viewers[i % viewers.length]!;
          const receipt = await viewer.call<{ admission_id: string }>('prompt.submit', {
            session_id: id,
            submission_id: `large-${i}`,
            text: `run: ${COMMAND}`,
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
      const samples: number[] = [];
      for (let s = 0; s < 5; s++) {
        await sleep(1000);
        samples.push(rssKiB(daemon.pid));
      }
      const describe = await viewers[0]!.call<{ agent_cache?: Record<string, unknown> }>('runtime.describe');
      const cache = describe.agent_cache ?? {};
      const evictions = (cache['evictions'] ?? {}) as Record<string, number>;
      const counters: Record<string, number | string> = {
        cached_agents: Number(cache['size'] ?? 0),
        cache_hits: Number(cache['hits'] ?? 0),
        cache_misses: Number(cache['misses'] ?? 0),
        cached_mib: Math.round((Number(cache['bytes'] ?? 0) / 2 ** 20) * 10) / 10,
        ...Object.fromEntries(Object.entries(evictions).map(([k, v]) => [`evictions_${k}`, v])),
      };
      const mib = (kib: number) => Math.round((kib / 1024) * 10) / 10;
      const idleBaseline = { name: 'idle daemon', value: mib(idle) };
      const figures: BenchFigure[] = [
        figure({
          bench: NAME,
          name: `RSS with ${SESSIONS} sessions attached, before the turns`,
          value: mib(before),
          unit: 'MiB',
          baseline: idleBaseline,
          higherIsBetter: false,
        }),
        figure({
          bench: NAME,
          name: `peak RSS while ${SESSIONS} turns print 1 MiB each`,
          value: mib(peak),
          unit: 'MiB',
          baseline: idleBaseline,
          higherIsBetter: false,
        }),
        figure({
          bench: NAME,
          name: `RSS after the turns, viewers detached, housekeeping and a forced GC`,
          value: mib(after),
          unit: 'MiB',
          baseline: idleBaseline,
          higherIsBetter: false,
          // 40 MiB of tool output went through; what stays must be a small part of it.
          aim: { op: '<=', ratio: 1.5 },
          extra: {
            ...counters,
            rss_after_5s_mib: mib(Math.max(...samples)),
            output_through_daemon_mib: (SESSIONS * OUTPUT_BYTES) / 2 ** 20,
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
