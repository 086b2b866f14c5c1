/**
 * Several gateways on one PostgreSQL (issue 14): one, two and three `gatehouse serve` instances with
 * `cluster.enabled` on a fresh schema each, the same client harness for each size, in one run.
 *
 * - admissions/s: clients spread over the instances keep `prompt.submit` calls in flight over many
 *   sessions while the model is held (only admission: validate, commit, acknowledge);
 * - turns/s: conversations spread over the instances, each submitting its next input when its
 *   previous turn completes (its events reach the instance it talks to, whichever runs the turn);
 * - failover: the instance that owns a session is SIGKILLed; a client on another instance submits
 *   at once; the time until that turn completes, against the lease period (`cluster.lease_s`).
 *
 * Baselines: the one-instance cluster for the sizes, the lease period for failover. On this
 * machine's two cores, three daemons, PostgreSQL and the clients share the same CPUs: the figures
 * show what the cluster costs, not how it scales.
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
import { figure, type Bench, type BenchFigure } from './lib.js';
import { createBenchSchema, type BenchSchema } from './postgres.js';

const TEXT = 'please look at the build output and summarise the failures';
const URL_ENV = 'GATEHOUSE_BENCH_STORE_URL';
const LEASE_S = 2;

interface Cluster {
  schema: BenchSchema;
  daemons: BenchDaemon[];
  close(): Promise<void>;
}

async function startCluster(size: number, demo: DemoModelServer): Promise<Cluster> {
  const schema = await createBenchSchema();
  const config = (name: string) =>
    `${configFor({ modelBaseUrl: demo.baseUrl })}store:\n  kind: postgres\n  url_env: ${URL_ENV}\n` +
    `cluster:\n  enabled: true\n  lease_s: ${LEASE_S}\n  instance_name: ${name}\n`;
  const daemons: BenchDaemon[] = [];
  for (let i = 0; i < size; i++)
    daemons.push(await startBenchDaemon(config(`i${i}`), undefined, [], { [URL_ENV]: schema.url }));
  return {
    schema,
    daemons,
    async close() {
      for (const d of daemons) await d.close();
      await schema.drop();
    },
  };
}

/** Connections spread over the instances, round robin. */
async function connect(cluster: Cluster, count: number): Promise<GatewayClient[]> {
  const out: GatewayClient[] = [];
  for (let i = 0; i < count; i++) out.push(await cluster.daemons[i % cluster.daemons.length]!.connect());
  return out;
}

async function admissionsPerSecond(
  clients: GatewayClient[],
  sessions: string[],
  ms: number,
): Promise<number> {
  const until = performance.now() + ms;
  let done = 0;
  let n = 0;
  const loop = async (client: GatewayClient) => {
    while (performance.now() < until) {
      const i = n++;
      await client.call('prompt.submit', {
        session_id: sessions[i % sessions.length],
        submission_id: `a-${i}`,
        text: TEXT,
      });
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(clients.flatMap((c) => Array.from({ length: 8 }, () => loop(c))));
  return done / ((performance.now() - start) / 1000);
}

async function turnsPerSecond(clients: GatewayClient[], cwd: string, conversations: number, ms: number) {
  const routers = clients.map((c) => new CompletionRouter(c));
  const sessions = await createSessions(clients, conversations, cwd);
  for (let i = 0; i < sessions.length; i++)
    await clients[i % clients.length]!.call('session.resume', { session_id: sessions[i] });
  const until = performance.now() + ms;
  let done = 0;
  let n = 0;
  const start = performance.now();
  await Promise.all(
    sessions.map(async (id, i) => {
      const client = clients[i % clients.length]!;
      while (performance.now() < until) {
        const receipt = await client.call<{ admission_id: string }>('prompt.submit', {
          session_id: id,
          submission_id: `t-${n++}`,
          text: TEXT,
        });
        await routers[i % clients.length]!.completion(receipt.admission_id);
        done++;
      }
    }),
  );
  return done / ((performance.now() - start) / 1000);
}

/**
 * Kills the owner of a session while its turn waits at the model, and times how long until that
 * turn completes on another instance: the lease expires, a survivor takes the session over and
 * resumes the turn at its model call (REC-7).
 */
async function failoverMs(cluster: Cluster, demo: DemoModelServer, cwd: string): Promise<number> {
  const [owner, other] = cluster.daemons;
  const a = await owner!.connect();
  const b = await other!.connect();
  const [id] = await createSessions([a], 1, cwd);
  const routerB = new CompletionRouter(b);
  await b.call('session.resume', { session_id: id });
  const seen = demo.requests.length;
  demo.hold();
  // Admitted on the owner-to-be while nobody holds the session: it takes the lease and calls the model.
  const held = await a.call<{ admission_id: string }>('prompt.submit', {
    session_id: id,
    submission_id: 'f-1',
    text: TEXT,
  });
  await demo.waitForRequests(seen + 1);
  owner!.child.kill('SIGKILL');
  const t = performance.now();
  demo.release();
  await routerB.completion(held.admission_id);
  return performance.now() - t;
}

const bench: Bench = {
  name: 'cluster',
  async run({ quick }) {
    const admitMs = quick ? 500 : 1500;
    const turnMs = quick ? 1000 : 3000;
    const clientsN = quick ? 3 : 12;
    const sessionsN = quick ? 30 : 300;
    const conversations = quick ? 6 : 24;
    const cwd = tempDir('gh-bench-cluster-cwd-');
    const admissions = new Map<number, number>();
    const turns = new Map<number, number>();
    const figures: BenchFigure[] = [];
    try {
      for (const size of [1, 2, 3]) {
        const demo = await startDemoModel({ latencyMs: 0, record: false });
        const cluster = await startCluster(size, demo);
        try {
          const clients = await connect(cluster, clientsN);
          turns.set(size, await turnsPerSecond(clients, cwd, conversations, turnMs));
          const sessions = await createSessions(clients, sessionsN, cwd);
          demo.hold();
          admissions.set(size, await admissionsPerSecond(clients, sessions, admitMs));
        } finally {
          demo.release();
          await cluster.close();
          await demo.close();
        }
      }
      for (const size of [2, 3]) {
        figures.push(
          figure({
            bench: 'cluster',
            name: `admissions/s, ${size} instances vs 1`,
            value: admissions.get(size)!,
            unit: '/s',
            baseline: { name: 'one instance, same harness', value: admissions.get(1)! },
            extra: { clients: clientsN, sessions: sessionsN },
          }),
          figure({
            bench: 'cluster',
            name: `turns/s, ${size} instances vs 1`,
            value: turns.get(size)!,
            unit: '/s',
            baseline: { name: 'one instance, same harness', value: turns.get(1)! },
            extra: { conversations },
          }),
        );
      }
      // Recorded: the failover waits for the held request to arrive.
      const demo = await startDemoModel({ latencyMs: 0, record: true });
      const cluster = await startCluster(2, demo);
      try {
        const samples: number[] = [];
        samples.push(await failoverMs(cluster, demo, cwd));
        figures.push(
          figure({
            bench: 'cluster',
            name: 'failover: a turn held at the model when its owner was killed',
            value: samples[0]!,
            unit: 'ms',
            baseline: { name: 'the lease period (cluster.lease_s)', value: LEASE_S * 1000 },
            higherIsBetter: false,
            aim: { op: '<=', ratio: 1.5 },
          }),
        );
      } finally {
        await cluster.close();
        await demo.close();
      }
      return figures;
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  },
};

export default bench;
