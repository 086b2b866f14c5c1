/**
 * The agent cache (issue 11, AGC-1..3), in process on the product's local-session path
 * (prompt.submit → scheduler → turn job → runner) with a real SQLite file on tmpfs (/dev/shm when
 * there is one, so a flush costs nothing and the gateway's own work shows) and a zero-latency model
 * that answers at once without looking at the request:
 *
 * - turn overhead with a history of 10, 1,000 and 10,000 stored messages, turns alternated between
 *   the three sessions in the same run; the figure is the 10,000 median over the 10 median (aim
 *   <= 1.2). The same is measured with the cache off (max_size 0: every turn loads and maps the
 *   whole history, as before the cache) for comparison.
 * - memory: 1,000 sessions of 200 messages each with the pressure budget fixed at idle + 50 MiB and
 *   a housekeeping pass after every 10 turns; the peak anonymous memory (read after every turn)
 *   and the reading after the last pass and a GC, against the budget (aim <= 1.1 for both), with
 *   the evictions and forced collections counted. The same fill without the collection after a
 *   pressure eviction (as before it existed) is measured in the same run for comparison.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { AgentCache } from '../src/domain/agents/agent-cache.js';
import { DEFAULT_LIMITS, type CacheLimits, type MemoryReading } from '../src/domain/agents/cache-policy.js';
import { makePrincipal, OPERATOR_CAPABILITIES } from '../src/domain/auth/principal.js';
import type { LocalSessions } from '../src/domain/local/service.js';
import type { TranscriptMessage } from '../src/domain/vocabulary.js';
import { Housekeeping } from '../src/daemon/housekeeping.js';
import { garbageCollector, processAnonBytes } from '../src/daemon/memory.js';
import type { ChatModel } from '../src/runtime/model/client.js';
import { ZERO_USAGE } from '../src/runtime/model/wire.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { localSessionsOn } from '../test/fixtures/local-harness.js';
import { figure, percentile, type Bench, type BenchFigure } from './lib.js';

const NAME = 'agent-cache';
const MiB = 2 ** 20;

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Answers at once, whatever it is asked: the model costs nothing, the gateway's work shows. */
const zeroLatency: ChatModel = {
  complete: () =>
    Promise.resolve({
      text: 'ok',
      reasoning: null,
      toolCalls: [],
      finishReason: 'stop',
      usage: { ...ZERO_USAGE },
      model: 'zero',
      attempts: 1,
    }),
};

function benchDir(): string {
  const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
  return fs.mkdtempSync(path.join(base, 'gatehouse-bench-agents-'));
}

interface Rig {
  sessions: LocalSessions;
  store: SqliteSessionStore;
  agents: AgentCache;
  create(): Promise<string>;
  seed(logicalId: string, messages: number, size: number): Promise<void>;
  turn(logicalId: string, text: string): Promise<void>;
  close(): Promise<void>;
}

let submissions = 0;

async function rig(
  limits: CacheLimits,
  memory?: { read: () => MemoryReading; reclaim: () => void },
): Promise<Rig> {
  const dir = benchDir();
  const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
  const agents = new AgentCache({
    source: store,
    limits,
    ...(memory ? { readMemory: memory.read, reclaim: memory.reclaim } : {}),
  });
  const owner = makePrincipal('native:owner', 'native', 'default', OPERATOR_CAPABILITIES);
  const sessions = await localSessionsOn({
    store,
    dir,
    model: zeroLatency,
    agents,
    maxConcurrentTurns: 8,
    onError: (error) => process.stderr.write(`agent cache bench: ${String(error)}\n`),
  });
  return {
    sessions,
    store,
    agents,
    create: async () => (await sessions.create(owner, { toolsets: [], cwd: dir }))['session_id'] as string,
    async seed(logicalId, messages, size) {
      const physical = sessions.validatedReceipt(logicalId)!.current_session_id;
      const text = 'x'.repeat(size);
      const batch: TranscriptMessage[] = [];
      for (let i = 0; i < messages; i++) {
        batch.push({ role: i % 2 === 0 ? 'user' : 'assistant', content: `${i} ${text}` });
      }
      await store.appendToTranscript(physical, batch);
    },
    async turn(logicalId, text) {
      const settled = sessions.events.next('turn:settled', (e) => e.logical_id === logicalId, 60_000);
      await sessions.inputs.submit(owner, {
        session_id: logicalId,
        submission_id: `b-${++submissions}`,
        text,
      });
      await settled;
      if (sessions.scheduler.busy(logicalId)) {
        await sessions.events.next('queue:idle', (e) => e.logical_id === logicalId, 60_000);
      }
    },
    async close() {
      await sessions.drain(Date.now() + 1000);
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Median turn time (ms) per history size, the sizes alternated turn by turn. */
async function overhead(limits: CacheLimits, sizes: number[], turns: number): Promise<number[]> {
  const r = await rig(limits);
  try {
    const ids = await Promise.all(sizes.map(() => r.create()));
    for (const [i, id] of ids.entries()) {
      await r.seed(id, sizes[i]!, 200);
      await r.turn(id, 'warm up');
    }
    const times: number[][] = sizes.map(() => []);
    for (let t = 0; t < turns; t++) {
      for (const [i, id] of ids.entries()) {
        const start = performance.now();
        await r.turn(id, `turn ${t}`);
        times[i]!.push(performance.now() - start);
      }
    }
    return times.map((list) =>
      percentile(
        [...list].sort((a, b) => a - b),
        50,
      ),
    );
  } finally {
    await r.close();
  }
}

interface MemoryRun {
  idle: number;
  budget: number;
  peak: number;
  after: number;
  fillMs: number;
  gcs: { count: number; ms: number };
  stats: ReturnType<AgentCache['stats']>;
}

/**
 * One fill of `sessions` sessions under the budget. `reclaim`: a pressure eviction is followed by a
 * rate-limited forced collection, as in the daemon (services/gateway.ts); without it, as before.
 */
async function fill(sessions: number, reclaim: boolean): Promise<MemoryRun> {
  // The budget is known once the idle reading is taken; the cache reads it as the daemon's does.
  let budget = Infinity;
  const reading = (): MemoryReading => ({ anonBytes: processAnonBytes(), budgetBytes: budget });
  const gcs = { count: 0, ms: 0 };
  const timedGc = (): void => {
    const start = performance.now();
    gc();
    gcs.count++;
    gcs.ms += performance.now() - start;
  };
  const collector = reclaim ? garbageCollector({ collect: timedGc }) : () => false;
  const r = await rig(
    { ...DEFAULT_LIMITS, maxSize: sessions, idleTtlMs: 0 },
    { read: reading, reclaim: collector },
  );
  try {
    const ids = await Promise.all(Array.from({ length: sessions }, () => r.create()));
    for (const id of ids) await r.seed(id, 200, 400);
    // Idle: the stored sessions exist (and SQLite's page cache holds them), no agent is cached.
    for (let i = 0; i < 3; i++) gc();
    const idle = processAnonBytes();
    budget = idle + 50 * MiB;
    const housekeeping = new Housekeeping({
      intervalMs: 60_000,
      agents: r.agents,
      readMemory: reading,
      releaseIdle: () => r.sessions.releaseIdle(),
      maxAgeDays: 0,
      prune: () => Promise.resolve([]),
    });
    let peak = 0;
    const fillStart = performance.now();
    for (const [i, id] of ids.entries()) {
      await r.turn(id, `hello ${i}`);
      if (i % 10 === 9) await housekeeping.pass();
      peak = Math.max(peak, processAnonBytes());
    }
    const fillMs = performance.now() - fillStart;
    const forced = { ...gcs };
    await housekeeping.pass();
    for (let i = 0; i < 3; i++) gc();
    return { idle, budget, peak, after: processAnonBytes(), fillMs, gcs: forced, stats: r.agents.stats() };
  } finally {
    await r.close();
  }
}

async function memory(quick: boolean): Promise<BenchFigure[]> {
  const sessions = quick ? 300 : 1000;
  const without = await fill(sessions, false);
  const run = await fill(sessions, true);
  const label = `${sessions} sessions x 200 messages (budget idle + 50 MiB)`;
  const extra = (m: MemoryRun) => ({
    idle_mib: Math.round(m.idle / MiB),
    peak_mib: Math.round(m.peak / MiB),
    after_mib: Math.round(m.after / MiB),
    cached_agents: m.stats.size,
    pressure_evictions: m.stats.evictions.pressure,
    cached_mib: Math.round(m.stats.bytes / MiB),
    fill_s: Math.round(m.fillMs / 100) / 10,
    forced_gcs: m.gcs.count,
    forced_gc_ms: Math.round(m.gcs.ms),
  });
  return [
    figure({
      bench: NAME,
      name: `peak anonymous memory while filling ${label}`,
      value: run.peak / MiB,
      unit: 'MiB',
      baseline: { name: 'budget', value: run.budget / MiB },
      higherIsBetter: false,
      aim: { op: '<=', ratio: 1.1 },
      extra: extra(run),
    }),
    figure({
      bench: NAME,
      name: `anonymous memory after ${label}, after a GC`,
      value: run.after / MiB,
      unit: 'MiB',
      baseline: { name: 'budget', value: run.budget / MiB },
      higherIsBetter: false,
      aim: { op: '<=', ratio: 1.1 },
    }),
    figure({
      bench: NAME,
      name: `peak anonymous memory while filling ${label}, no collection after evicting (before)`,
      value: without.peak / MiB,
      unit: 'MiB',
      baseline: { name: 'budget', value: without.budget / MiB },
      higherIsBetter: false,
      extra: extra(without),
    }),
  ];
}

const bench: Bench = {
  name: NAME,
  async run({ quick }) {
    const sizes = [10, 1000, 10_000];
    const turns = quick ? 15 : 60;
    const cached = await overhead(DEFAULT_LIMITS, sizes, turns);
    const uncached = await overhead({ ...DEFAULT_LIMITS, maxSize: 0 }, sizes, turns);
    const figures: BenchFigure[] = [];
    for (const [label, times] of [
      ['cache on', cached],
      ['cache off (every turn loads the history)', uncached],
    ] as const) {
      figures.push(
        figure({
          bench: NAME,
          name: `turn with 10,000 messages of history vs 10 (${label})`,
          value: times[2]!,
          unit: 'ms',
          baseline: { name: '10 messages', value: times[0]! },
          higherIsBetter: false,
          aim: label === 'cache on' ? { op: '<=', ratio: 1.2 } : undefined,
          extra: { ms_10: times[0]!, ms_1000: times[1]!, ms_10000: times[2]! },
        }),
      );
    }
    figures.push(...(await memory(quick)));
    return figures;
  },
};

export default bench;
