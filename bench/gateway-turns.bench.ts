/**
 * Turns through the daemon (issue 4), with the zero-latency demo model in the bench process:
 *
 * - overhead: one `prompt.submit` → `turn.complete` notification on a resumed session, against a
 *   direct streamed HTTP call of the same model with the same request body from the same process
 *   (ModelClient), alternated so machine drift hits both alike;
 * - throughput: 8 and 100 conversations driven at once (each submits its next prompt when its
 *   previous turn completes), against the same number of direct conversations in loops; on both
 *   sides a conversation carries its history for 10 turns, then a fresh one starts.
 *
 * Topology: daemon = `gatehouse serve` child process (max_concurrent_turns = 100); demo model =
 * `gatehouse demo-model` child process, like a real provider; clients and direct calls = the bench
 * process. A daemon turn makes durable commits on its critical path that the direct call does not
 * (the admission before its receipt, the final answer with the settlement before turn.complete;
 * the claim with the input commits before the model is called, its flush left to the next one). The
 * figures give the flushes a turn (from runtime.describe), what one flush costs on the home's file
 * system in the same run (`flush_p50_ms`) and the floor those put under the ratio (`floor_ratio`:
 * the direct call plus the flushes, everything else free). The overhead is measured twice: with the daemon's home on the bench machine's disk, and on tmpfs
 * (/dev/shm) where a flush costs nothing — the second shows the gateway's own cost.
 */
import { performance } from 'node:perf_hooks';
import { closeSync, existsSync, fdatasyncSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { ModelClient } from '../src/runtime/model/client.js';
import type { WireMessage, WireTool } from '../src/runtime/model/wire.js';
import type { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import {
  CompletionRouter,
  configFor,
  cpuMs,
  createSessions,
  startBenchDaemon,
  startChildDemoModel,
  tempDir,
  type BenchDaemon,
} from './gateway-daemon.js';
import { figure, percentile, type Bench, type BenchFigure } from './lib.js';

const INPUT = 'measure the overhead of one turn through the gateway please';
/** Turns per conversation in the throughput figures, on both sides, before a fresh one starts. */
const CONVERSATION_TURNS = 10;

interface Attached {
  client: GatewayClient;
  router: CompletionRouter;
  sessionId: string;
}

/** One turn through the daemon: submit, then wait for its turn.complete. */
async function daemonTurn(a: Attached, n: number): Promise<void> {
  const receipt = await a.client.call<{ admission_id: string }>('prompt.submit', {
    session_id: a.sessionId,
    submission_id: `t-${n}`,
    text: INPUT,
  });
  await a.router.completion(receipt.admission_id);
}

/** Runs `concurrency` loops of `fn` for `ms` after a warm-up; returns completions per second. */
async function loops(
  concurrency: number,
  warmMs: number,
  ms: number,
  fn: (slot: number, n: number) => Promise<unknown>,
): Promise<{ perSecond: number; completed: number }> {
  const from = performance.now() + warmMs;
  const until = from + ms;
  let counted = 0;
  let n = 0;
  let completed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, slot) => {
      while (performance.now() < until) {
        await fn(slot, n++);
        completed++;
        // Completions inside the window count whenever they started: a turn may take longer than it.
        const end = performance.now();
        if (end >= from && end <= until) counted++;
      }
    }),
  );
  return { perSecond: counted / (ms / 1000), completed };
}

const prefixed = (prefix: string, values: Record<string, number>): Record<string, number> =>
  Object.fromEntries(Object.entries(values).map(([key, value]) => [`${prefix}${key}`, value]));

/** CPU ms so far of this process, the daemon and the demo model. */
function cpuNow(
  daemonPid: number,
  modelPid: number,
): { bench: number; daemon: number; model: number; at: number } {
  const own = process.cpuUsage();
  return {
    bench: (own.user + own.system) / 1000,
    daemon: cpuMs(daemonPid),
    model: cpuMs(modelPid),
    at: performance.now(),
  };
}

/**
 * Each process's CPU per completion over a run of `loops` (warm-up included, all completions
 * counted), and the cores they kept busy together: where the two cores are the limit, the ratio of
 * two runs' throughputs cannot pass the inverse ratio of their CPU per completion.
 */
async function withCpu(
  daemonPid: number,
  modelPid: number,
  run: () => Promise<{ perSecond: number; completed: number }>,
): Promise<{
  perSecond: number;
  cpu: { bench: number; daemon: number; model: number; total: number };
  cores: number;
}> {
  const before = cpuNow(daemonPid, modelPid);
  const { perSecond, completed } = await run();
  const after = cpuNow(daemonPid, modelPid);
  const per = (key: 'bench' | 'daemon' | 'model') => (after[key] - before[key]) / completed;
  const total = per('bench') + per('daemon') + per('model');
  const round3 = (v: number) => Math.round(v * 1000) / 1000;
  return {
    perSecond,
    cpu: {
      bench: round3(per('bench')),
      daemon: round3(per('daemon')),
      model: round3(per('model')),
      total: round3(total),
    },
    cores: Math.round(((total * completed) / (after.at - before.at)) * 100) / 100,
  };
}

interface Overhead {
  turn50: number;
  turn99: number;
  direct50: number;
  direct99: number;
  /** p50 of an fdatasync of a 4 KiB append on the daemon's home's file system, in ms. */
  flush50: number;
  /** The daemon's log flushes a turn over the samples (runtime.describe). */
  flushesPerTurn: number;
  samples: number;
}

/**
 * What a log flush costs on the file system of `dir`: a 4 KiB append and its fdatasync, as the
 * daemon's group commit does for a turn's write-ahead log frames. Timed from the bench process.
 */
function flushProbe(dir: string): { flush(): number; close(): void } {
  const file = join(dir, 'bench-flush-probe');
  const fd = openSync(file, 'a', 0o600);
  const page = Buffer.alloc(4096, 0x2a);
  return {
    flush() {
      writeSync(fd, page);
      const t = performance.now();
      fdatasyncSync(fd);
      return performance.now() - t;
    },
    close() {
      closeSync(fd);
      rmSync(file, { force: true });
    },
  };
}

/**
 * The overhead figures' extras: the flush cost measured in the same run, and the floor it puts
 * under the ratio: the direct call plus the turn's flushes, were everything else the daemon does free.
 */
function flushExtras(o: Overhead): Record<string, number> {
  return {
    samples: o.samples,
    flush_p50_ms: Math.round(o.flush50 * 1000) / 1000,
    flushes_a_turn: Math.round(o.flushesPerTurn * 100) / 100,
    floor_ratio: Math.round(((o.direct50 + o.flushesPerTurn * o.flush50) / o.direct50) * 100) / 100,
  };
}

/**
 * One viewer; every sample is the first turn of a fresh session, so the model sees the same request
 * as the direct call (a session's history would otherwise grow). Daemon turns and direct calls
 * alternate, so machine drift hits both alike.
 */
async function measureOverhead(
  daemon: BenchDaemon,
  direct: () => Promise<void>,
  cwd: string,
  quick: boolean,
): Promise<Overhead> {
  const viewer = await daemon.connect();
  const router = new CompletionRouter(viewer);
  const n = quick ? 30 : 400;
  const warmup = quick ? 5 : 30;
  const fresh = await createSessions([viewer], n + warmup, cwd, 4);
  for (const id of fresh) await viewer.call('session.resume', { session_id: id });
  let sample = 0;
  const nextFresh = (): Attached => ({ client: viewer, router, sessionId: fresh[sample++]! });
  const turnMs: number[] = [];
  const directMs: number[] = [];
  const flushMs: number[] = [];
  const probe = flushProbe(daemon.home);
  type Storage = { log_flushes: number };
  const flushes = async () =>
    (await viewer.call<{ storage: Storage }>('runtime.describe', {})).storage.log_flushes;
  try {
    for (let i = 0; i < warmup; i++) {
      await daemonTurn(nextFresh(), sample);
      await direct();
    }
    const flushesBefore = await flushes();
    for (let i = 0; i < n; i++) {
      const order = i % 2 === 0 ? ['turn', 'direct'] : ['direct', 'turn'];
      for (const which of order) {
        const t = performance.now();
        if (which === 'turn') await daemonTurn(nextFresh(), sample);
        else await direct();
        (which === 'turn' ? turnMs : directMs).push(performance.now() - t);
      }
      // Between the pairs, never inside one: a flush of the home's file system, as the daemon's.
      flushMs.push(probe.flush());
    }
    const flushesPerTurn = ((await flushes()) - flushesBefore) / n;
    await viewer.close();
    turnMs.sort((a, b) => a - b);
    directMs.sort((a, b) => a - b);
    flushMs.sort((a, b) => a - b);
    return {
      turn50: percentile(turnMs, 50),
      turn99: percentile(turnMs, 99),
      direct50: percentile(directMs, 50),
      direct99: percentile(directMs, 99),
      flush50: percentile(flushMs, 50),
      flushesPerTurn,
      samples: n,
    };
  } finally {
    probe.close();
  }
}

const bench: Bench = {
  name: 'gateway-turns',
  async run({ quick }) {
    const demo = await startChildDemoModel();
    const model = new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo' });
    const daemon = await startBenchDaemon(configFor({ modelBaseUrl: demo.baseUrl, maxConcurrentTurns: 100 }));
    const cwd = tempDir('gh-bench-cwd-');
    const figures: BenchFigure[] = [];
    try {
      // The baseline sends exactly what the gateway sends on a session's first turn (its system
      // prompt, the user message and the session's tool schemas), so the ratio is the gateway's own
      // cost and not a difference in payload: one probe session, pointed at a recording demo model
      // in this process, shows the request.
      const recorder = await startDemoModel();
      const probe = await daemon.connect();
      const created = await probe.call<{ session_id: string }>('session.create', {
        cwd,
        base_url: recorder.baseUrl,
        model: 'gatehouse-demo',
      });
      await probe.call('session.resume', { session_id: created.session_id });
      await daemonTurn(
        { client: probe, router: new CompletionRouter(probe), sessionId: created.session_id },
        0,
      );
      await probe.close();
      const sent = recorder.requests[0]!.body as unknown as { messages: WireMessage[]; tools?: WireTool[] };
      await recorder.close();
      const direct = async () => {
        await model.complete({ messages: sent.messages, tools: sent.tools, onDelta: () => undefined });
      };

      const overhead = await measureOverhead(daemon, direct, cwd, quick);
      figures.push(
        figure({
          bench: 'gateway',
          name: 'turn submit→complete p50',
          value: overhead.turn50,
          unit: 'ms',
          baseline: { name: 'direct model call p50', value: overhead.direct50 },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 2 },
          extra: flushExtras(overhead),
        }),
        figure({
          bench: 'gateway',
          name: 'turn submit→complete p99',
          value: overhead.turn99,
          unit: 'ms',
          baseline: { name: 'direct model call p99', value: overhead.direct99 },
          higherIsBetter: false,
          extra: { samples: overhead.samples },
        }),
      );
      if (existsSync('/dev/shm')) {
        const onTmpfs = await startBenchDaemon(
          configFor({ modelBaseUrl: demo.baseUrl, maxConcurrentTurns: 100 }),
          '/dev/shm',
        );
        try {
          const m = await measureOverhead(onTmpfs, direct, cwd, quick);
          figures.push(
            figure({
              bench: 'gateway',
              name: 'turn p50, home on tmpfs (no flush cost)',
              value: m.turn50,
              unit: 'ms',
              baseline: { name: 'direct model call p50', value: m.direct50 },
              higherIsBetter: false,
              aim: { op: '<=', ratio: 2 },
              extra: flushExtras(m),
            }),
          );
        } finally {
          await onTmpfs.close();
        }
      }

      // Throughput: `count` conversations at once, over a handful of viewer connections. Both sides
      // start a fresh conversation every CONVERSATION_TURNS turns (the gateway: the slot moves on to
      // its next session; the direct side: the history is reset), so each sends the model the same
      // amount of history per turn whichever side completes more turns in the window.
      let turnNo = 0;
      const warmMs = quick ? 200 : 1000;
      const measureMs = quick ? 700 : 4000;
      for (const count of quick ? [8] : [8, 100]) {
        const connections = await Promise.all(
          Array.from({ length: Math.min(count, 8) }, () => daemon.connect()),
        );
        const routers = connections.map((c) => new CompletionRouter(c));
        const perSlot = count <= 8 ? 40 : 8; // more than a slot can finish in the window
        const ids = await createSessions(connections, count * perSlot, cwd);
        const slots: { sessions: Attached[]; turns: number }[] = Array.from({ length: count }, () => ({
          sessions: [],
          turns: 0,
        }));
        for (const [i, id] of ids.entries()) {
          const c = i % connections.length;
          await connections[c]!.call('session.resume', { session_id: id });
          slots[i % count]!.sessions.push({ client: connections[c]!, router: routers[c]!, sessionId: id });
        }
        const turns = await withCpu(daemon.pid, demo.pid, () =>
          loops(count, warmMs, measureMs, (slot) => {
            const state = slots[slot]!;
            const index = Math.min(Math.floor(state.turns++ / CONVERSATION_TURNS), state.sessions.length - 1);
            return daemonTurn(state.sessions[index]!, turnNo++);
          }),
        );
        const conversations = Array.from({ length: count }, () => ({
          history: [...sent.messages],
          turns: 0,
        }));
        const calls = await withCpu(daemon.pid, demo.pid, () =>
          loops(count, warmMs, measureMs, async (slot) => {
            const conversation = conversations[slot]!;
            if (conversation.turns++ % CONVERSATION_TURNS === 0) conversation.history = [...sent.messages];
            const answer = await model.complete({
              messages: conversation.history,
              tools: sent.tools,
              onDelta: () => undefined,
            });
            conversation.history.push(
              { role: 'assistant', content: answer.text },
              { role: 'user', content: INPUT },
            );
          }),
        );
        await Promise.all(connections.map((c) => c.close()));
        figures.push(
          figure({
            bench: 'gateway',
            name: `turns/s, ${count} sessions at once`,
            value: turns.perSecond,
            unit: '/s',
            baseline: { name: `direct model calls/s, ${count} at once`, value: calls.perSecond },
            // Issue 32 aim 4: at least 0.6x of the direct conversations with 8, 0.9x with 100.
            aim: { op: '>=', ratio: count >= 100 ? 0.9 : 0.6 },
            // CPU ms per turn and per direct call, by process, and the cores each run kept busy:
            // `cpu_bound` is the direct side's CPU per call over the gateway side's CPU per turn,
            // the highest this ratio can reach while the two cores are the limit.
            extra: {
              sessions: count,
              measured_ms: measureMs,
              ...prefixed('turn_cpu_ms_', turns.cpu),
              ...prefixed('direct_cpu_ms_', calls.cpu),
              turn_cores: turns.cores,
              direct_cores: calls.cores,
              cpu_bound: Math.round((calls.cpu.total / turns.cpu.total) * 1000) / 1000,
            },
          }),
        );
      }
      return figures;
    } finally {
      await daemon.close();
      await demo.close();
      rmSync(cwd, { recursive: true, force: true });
    }
  },
};

export default bench;
