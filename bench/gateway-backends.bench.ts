/**
 * The gateway on PostgreSQL against the gateway on SQLite (issue 14): the same daemon binary, the
 * same client harness, in the same run — one `gatehouse serve` with `store.kind: sqlite`, one with
 * `store.kind: postgres` in a fresh schema of the local server (bench/postgres.ts). Figures:
 *
 * - durable admissions/s: many WebSocket clients keep `prompt.submit` calls in flight over many
 *   sessions while each daemon's model is held, so only admission (validate, group commit,
 *   acknowledge) is measured;
 * - turn p50: one conversation's `prompt.submit` → `turn.complete`, the zero-latency demo model.
 *
 * Rounds alternate the two daemons so drift on this shared machine hits both alike. Each daemon has
 * a demo model of its own in the bench process (one is held while the other runs turns).
 */
import { performance } from 'node:perf_hooks';
import { rmSync } from 'node:fs';
import { startDemoModel, type DemoModelServer } from '../src/runtime/demo/server.js';
import type { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import {
  CompletionRouter,
  configFor,
  createSessions,
  startBenchDaemon,
  tempDir,
  type BenchDaemon,
} from './gateway-daemon.js';
import { figure, percentile, type Bench } from './lib.js';
import { createBenchSchema, type BenchSchema } from './postgres.js';

const TEXT = 'please look at the build output and summarise the failures';
const URL_ENV = 'GATEHOUSE_BENCH_STORE_URL';

interface Side {
  name: 'sqlite' | 'postgres';
  demo: DemoModelServer;
  daemon: BenchDaemon;
  clients: GatewayClient[];
  sessions: string[];
  /** A session of its own for the turn latency, and the router of its client. */
  turnSession: string;
  router: CompletionRouter;
  submitted: number;
}

async function startSide(
  name: Side['name'],
  schema: BenchSchema | null,
  clientsN: number,
  sessionsN: number,
  cwd: string,
): Promise<Side> {
  const demo = await startDemoModel({ latencyMs: 0, record: false });
  const store = schema ? `store:\n  kind: postgres\n  url_env: ${URL_ENV}\n` : '';
  const daemon = await startBenchDaemon(
    `${configFor({ modelBaseUrl: demo.baseUrl })}${store}`,
    undefined,
    [],
    schema ? { [URL_ENV]: schema.url } : {},
  );
  const clients = await Promise.all(Array.from({ length: clientsN }, () => daemon.connect()));
  const sessions = await createSessions(clients, sessionsN, cwd);
  const [turnSession] = await createSessions([clients[0]!], 1, cwd);
  // Viewing the session is what brings its turn.complete to this connection.
  await clients[0]!.call('session.resume', { session_id: turnSession });
  return {
    name,
    demo,
    daemon,
    clients,
    sessions,
    turnSession: turnSession!,
    router: new CompletionRouter(clients[0]!),
    submitted: 0,
  };
}

/** Every client keeps `inflight` submissions outstanding for `ms`; returns admissions per second. */
async function admissions(side: Side, inflight: number, ms: number): Promise<number> {
  const until = performance.now() + ms;
  let done = 0;
  const loop = async (client: GatewayClient) => {
    while (performance.now() < until) {
      const n = side.submitted++;
      await client.call('prompt.submit', {
        session_id: side.sessions[n % side.sessions.length],
        submission_id: `a-${n}`,
        text: TEXT,
      });
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(side.clients.flatMap((c) => Array.from({ length: inflight }, () => loop(c))));
  return done / ((performance.now() - start) / 1000);
}

/** `n` turns of one conversation, one after another; returns their latencies in ms. */
async function turns(side: Side, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const receipt = await side.clients[0]!.call<{ admission_id: string }>('prompt.submit', {
      session_id: side.turnSession,
      submission_id: `t-${side.submitted++}`,
      text: TEXT,
    });
    await side.router.completion(receipt.admission_id);
    out.push(performance.now() - t);
  }
  return out;
}

const bench: Bench = {
  name: 'gateway-backends',
  async run({ quick }) {
    const clientsN = quick ? 4 : 16;
    const inflight = 8;
    const sessionsN = quick ? 20 : 200;
    const rounds = quick ? 2 : 4;
    const admitMs = quick ? 500 : 1500;
    const turnsPerRound = quick ? 20 : 60;

    const cwd = tempDir('gh-bench-backends-cwd-');
    const schema = await createBenchSchema();
    const sides: Side[] = [];
    try {
      sides.push(await startSide('sqlite', null, clientsN, sessionsN, cwd));
      sides.push(await startSide('postgres', schema, clientsN, sessionsN, cwd));
      const latencies = new Map<Side['name'], number[]>(sides.map((s) => [s.name, []]));
      // Turns first, while nothing is queued; warm each side with a few.
      for (const side of sides) await turns(side, 5);
      for (let round = 0; round < rounds; round++) {
        for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
          latencies.get(side.name)!.push(...(await turns(side, turnsPerRound)));
        }
      }
      // Then admissions, each daemon's model held: every admitted turn waits, later ones queue.
      for (const side of sides) side.demo.hold();
      const admitted = new Map<Side['name'], number[]>(sides.map((s) => [s.name, []]));
      for (let round = 0; round < rounds; round++) {
        for (const side of round % 2 === 0 ? sides : [...sides].reverse()) {
          admitted.get(side.name)!.push(await admissions(side, inflight, admitMs));
        }
      }
      const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
      const p50 = (name: Side['name']) =>
        percentile(
          [...latencies.get(name)!].sort((a, b) => a - b),
          50,
        );
      const extra = {
        clients: clientsN,
        in_flight_per_client: inflight,
        sessions: sessionsN,
        rounds,
        turns_per_side: rounds * turnsPerRound,
        sqlite_turn_p90_ms: percentile(
          [...latencies.get('sqlite')!].sort((a, b) => a - b),
          90,
        ),
        postgres_turn_p90_ms: percentile(
          [...latencies.get('postgres')!].sort((a, b) => a - b),
          90,
        ),
      };
      return [
        figure({
          bench: 'gateway-backends',
          name: 'durable admissions/s, PostgreSQL vs SQLite',
          value: mean(admitted.get('postgres')!),
          unit: '/s',
          baseline: { name: 'same harness, SQLite daemon', value: mean(admitted.get('sqlite')!) },
          extra,
        }),
        figure({
          bench: 'gateway-backends',
          name: 'turn p50, PostgreSQL vs SQLite',
          value: p50('postgres'),
          unit: 'ms',
          baseline: { name: 'same harness, SQLite daemon', value: p50('sqlite') },
          higherIsBetter: false,
          extra,
        }),
      ];
    } finally {
      for (const side of sides) {
        side.demo.release();
        await side.daemon.close();
        await side.demo.close();
      }
      await schema.drop();
      rmSync(cwd, { recursive: true, force: true });
    }
  },
};

export default bench;
