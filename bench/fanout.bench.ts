/**
 * Fan-out (issue 32 aim 5): many viewers of one session.
 *
 * One session, resumed by one viewer, runs a sequence of turns; then by 1,000 viewers (one
 * WebSocket connection each, in this process), the same number of turns. Figures:
 * - the daemon's own CPU per event frame it delivered: its process CPU time (/proc) over the turns
 *   with 1,000 viewers, divided by the `session.event` frames the viewers received (aim: 5 µs);
 * - `turn.complete` p50 across all viewers (submit → each viewer's frame) against the same figure
 *   with one viewer in the same run (aim: at most 8x). The 1,000 clients share the machine with the
 *   daemon; their own CPU (this process's, over the same turns) is reported beside it.
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { GatewayClient, Notification } from '../src/surfaces/client/rpc-client.js';
import { configFor, startBenchDaemon, startChildDemoModel, tempDir } from './gateway-daemon.js';
import { figure, percentile, type Bench, type BenchFigure } from './lib.js';

const NAME = 'fanout';

/** A process's user and system CPU so far, in ms (/proc/<pid>/stat; USER_HZ is 100 on Linux). */
function cpuSplitMs(pid: number): { user: number; system: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return { user: Number(fields[11]) * 10, system: Number(fields[12]) * 10 };
}
/** A process's write and read system calls so far (/proc/<pid>/io: `write` and `writev` both count). */
function syscalls(pid: number): { writes: number; reads: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}: (\\d+)$`, 'm').exec(io)?.[1] ?? NaN);
  return { writes: field('syscw'), reads: field('syscr') };
}

/** The 1-minute load average, stated with every figure (the machine is shared). */
const loadAverage = (): number => Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);

const INPUT = 'hello from the fan-out bench';

interface Watched {
  client: GatewayClient;
  frames: number;
  /** admission id → the moment this viewer saw its turn.complete. */
  completed: Map<string, number>;
}

function watch(client: GatewayClient): Watched {
  const watched: Watched = { client, frames: 0, completed: new Map() };
  client.onNotification((n: Notification) => {
    if (n.method !== 'session.event') return;
    watched.frames += 1;
    const event = (n.params as { event: { type: string; admission_id?: string } }).event;
    if (event.type === 'turn.complete' && event.admission_id) {
      watched.completed.set(event.admission_id, performance.now());
    }
  });
  return watched;
}

/** Runs `turns` turns one after another; returns every viewer's submit → turn.complete latencies. */
async function runTurns(
  driver: GatewayClient,
  sessionId: string,
  viewers: Watched[],
  turns: number,
  tag: string,
): Promise<number[]> {
  const latencies: number[] = [];
  for (let i = 0; i < turns; i++) {
    const start = performance.now();
    const receipt = await driver.call<{ admission_id: string }>('prompt.submit', {
      session_id: sessionId,
      submission_id: `${tag}-${i}`,
      text: INPUT,
    });
    // Every viewer must see the turn end before the next one starts.
    while (viewers.some((v) => !v.completed.has(receipt.admission_id))) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const v of viewers) latencies.push(v.completed.get(receipt.admission_id)! - start);
  }
  return latencies.sort((a, b) => a - b);
}

const bench: Bench = {
  name: NAME,
  async run({ quick }) {
    const viewerCount = quick ? 200 : 1000;
    const turns = quick ? 10 : 40;
    const demo = await startChildDemoModel();
    const config = `${configFor({ modelBaseUrl: demo.baseUrl })}listener:\n  max_connections: ${viewerCount + 64}\n`;
    const daemon = await startBenchDaemon(config);
    try {
      const driver = await daemon.connect();
      const created = await driver.call<{ session_id: string }>('session.create', {
        cwd: tempDir('gh-fanout-'),
      });
      const sessionId = created.session_id;

      // One viewer (the driver itself).
      await driver.call('session.resume', { session_id: sessionId });
      const alone = watch(driver);
      await runTurns(driver, sessionId, [alone], 5, 'warm');
      const oneViewer = await runTurns(driver, sessionId, [alone], turns, 'one');

      // Many viewers: one connection each (tickets are asked for one at a time).
      const many: Watched[] = [alone];
      for (let i = 1; i < viewerCount; i++) {
        const client = await daemon.connect();
        await client.call('session.resume', { session_id: sessionId });
        many.push(watch(client));
      }
      await runTurns(driver, sessionId, many, 3, 'warm-many');
      const framesBefore = many.reduce((sum, v) => sum + v.frames, 0);
      const loadBefore = loadAverage();
      const splitBefore = cpuSplitMs(daemon.pid);
      const callsBefore = syscalls(daemon.pid);
      const ownCpuBefore = process.cpuUsage();
      const manyViewers = await runTurns(driver, sessionId, many, turns, 'many');
      const ownCpu = process.cpuUsage(ownCpuBefore);
      const splitAfter = cpuSplitMs(daemon.pid);
      const callsAfter = syscalls(daemon.pid);
      const daemonUser = splitAfter.user - splitBefore.user;
      const daemonSystem = splitAfter.system - splitBefore.system;
      const daemonCpu = daemonUser + daemonSystem;
      const frames = many.reduce((sum, v) => sum + v.frames, 0) - framesBefore;
      const perFrameUs = (daemonCpu * 1000) / frames;
      const clientsPerFrameUs = (ownCpu.user + ownCpu.system) / frames;

      const figures: BenchFigure[] = [
        figure({
          bench: NAME,
          name: `daemon CPU per event frame, ${viewerCount} viewers`,
          value: perFrameUs,
          unit: 'µs',
          baseline: { name: 'aim', value: 5 },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 1 },
          extra: {
            frames,
            daemon_cpu_ms: daemonCpu,
            daemon_user_ms: daemonUser,
            daemon_system_ms: daemonSystem,
            turns,
            clients_cpu_per_frame_us: Number(clientsPerFrameUs.toFixed(2)),
            write_syscalls_per_frame: Number(((callsAfter.writes - callsBefore.writes) / frames).toFixed(3)),
            read_syscalls_per_frame: Number(((callsAfter.reads - callsBefore.reads) / frames).toFixed(3)),
            load_before: loadBefore,
            load_after: loadAverage(),
          },
        }),
        figure({
          bench: NAME,
          name: `turn.complete p50 across ${viewerCount} viewers`,
          value: percentile(manyViewers, 50),
          unit: 'ms',
          baseline: { name: 'one viewer p50', value: percentile(oneViewer, 50) },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 8 },
          extra: {
            p99_ms: Number(percentile(manyViewers, 99).toFixed(2)),
            one_viewer_p99_ms: Number(percentile(oneViewer, 99).toFixed(2)),
          },
        }),
      ];
      return figures;
    } finally {
      await daemon.close();
      await demo.close();
    }
  },
};

export default bench;
