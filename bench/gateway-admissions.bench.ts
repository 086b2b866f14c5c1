/**
 * Durable admissions (issue 4): many WebSocket clients keep several `prompt.submit` calls in flight
 * each, spread over many sessions, while the model is held at its barrier so no turn finishes and
 * only admission (validate, group-commit with FULL sync, acknowledge) is measured.
 *
 * The daemon's `runtime.describe` storage counters, read around each round, give how many
 * operations one log flush acknowledged: the group-commit factor, whatever the disk's speed.
 *
 * Baselines in the same run:
 * - the transport ceiling: the same client harness against a trivial WebSocket JSON-RPC echo server
 *   in a child process (bench/echo-server.ts);
 * - the fsync ceiling: a raw single-row INSERT loop on a temp SQLite file, WAL, synchronous=FULL.
 *
 * Topology: daemon = `gatehouse serve` child process; echo = child process; clients, demo model and
 * the SQLite loop = the bench process. The machine's cores are shared by all of them.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { rmSync } from 'node:fs';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import { configFor, cpuMs, createSessions, startBenchDaemon, tempDir } from './gateway-daemon.js';
import { figure, percentile, rate, type Bench } from './lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));

interface DriveResult {
  perSecond: number;
  latenciesMs: number[];
  completed: number;
}

/**
 * The client harness: every client keeps `inflight` calls outstanding for `warmMs + measureMs`;
 * calls that finish inside the measuring window count (whenever they started), with their latencies.
 */
async function drive(
  clients: GatewayClient[],
  inflight: number,
  warmMs: number,
  measureMs: number,
  call: (client: GatewayClient, n: number) => Promise<unknown>,
): Promise<DriveResult> {
  const start = performance.now();
  const from = start + warmMs;
  const until = from + measureMs;
  const latencies: number[] = [];
  let n = 0;
  const loop = async (client: GatewayClient) => {
    while (performance.now() < until) {
      const t = performance.now();
      await call(client, n++);
      const end = performance.now();
      if (end >= from && end <= until) latencies.push(end - t);
    }
  };
  await Promise.all(clients.flatMap((c) => Array.from({ length: inflight }, () => loop(c))));
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / (measureMs / 1000), latenciesMs: latencies, completed: n };
}

function merge(results: DriveResult[], totalMs: number): DriveResult {
  const latenciesMs = results.flatMap((r) => r.latenciesMs).sort((a, b) => a - b);
  const completed = results.reduce((sum, r) => sum + r.completed, 0);
  return { perSecond: latenciesMs.length / (totalMs / 1000), latenciesMs, completed };
}

async function startEcho(): Promise<{ url: string; pid: number; close(): Promise<void> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(here, 'echo-server.ts')], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    let seen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('\n')) resolve(seen.trim());
    });
    child.once('exit', (code) => reject(new Error(`echo server exited with ${code}`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    close: async () => {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await gone;
    },
  };
}

async function fsyncCeiling(ms: number): Promise<number> {
  const dir = tempDir('gh-bench-fsync-');
  const db = new Database(path.join(dir, 'raw.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    return await rate(
      () => insert.run('an admission-sized row of text, about as long as a short prompt'),
      ms,
    );
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const bench: Bench = {
  name: 'gateway-admissions',
  async run({ quick }) {
    const clientsN = quick ? 8 : 64;
    const inflight = 8;
    const sessionsN = quick ? 50 : 1000;
    const warmMs = quick ? 200 : 300;
    const measureMs = quick ? 700 : 1500;
    const rounds = quick ? 1 : 4;
    const text = 'please look at the build output and summarise the failures';

    const demo = await startDemoModel({ latencyMs: 0, record: false });
    const daemon = await startBenchDaemon(configFor({ modelBaseUrl: demo.baseUrl }));
    const echo = await startEcho();
    const echoClients: GatewayClient[] = [];
    try {
      const clients = await Promise.all(Array.from({ length: clientsN }, () => daemon.connect()));
      const cwd = tempDir('gh-bench-cwd-');
      const sessions = await createSessions(clients, sessionsN, cwd);
      // Held: the first admitted turns wait at the model, every later admission stays queued.
      demo.hold();
      for (let i = 0; i < clientsN; i++) echoClients.push(await GatewayClient.connect(echo.url, 'echo'));
      const submit = (client: GatewayClient, n: number) =>
        client.call('prompt.submit', {
          session_id: sessions[n % sessions.length],
          submission_id: `b-${n}`,
          text,
        });
      // Rounds alternate the daemon and the echo server so load from other jobs hits both alike.
      const admitted: DriveResult[] = [];
      const echoed: DriveResult[] = [];
      let daemonCpu = 0;
      let echoCpu = 0;
      let offset = 0;
      type Storage = { committed_operations: number; log_flushes: number };
      const storage = async () =>
        (await clients[0]!.call<{ storage: Storage }>('runtime.describe', {})).storage;
      let operations = 0;
      let flushes = 0;
      for (let round = 0; round < rounds; round++) {
        let cpu = cpuMs(daemon.pid);
        const before = await storage();
        const a = await drive(clients, inflight, warmMs, measureMs, (c, n) => submit(c, offset + n));
        const after = await storage();
        operations += after.committed_operations - before.committed_operations;
        flushes += after.log_flushes - before.log_flushes;
        daemonCpu += cpuMs(daemon.pid) - cpu;
        offset += a.completed;
        admitted.push(a);
        cpu = cpuMs(echo.pid);
        echoed.push(await drive(echoClients, inflight, warmMs, measureMs, submit));
        echoCpu += cpuMs(echo.pid) - cpu;
      }
      const admit = merge(admitted, measureMs * rounds);
      const echoAll = merge(echoed, measureMs * rounds);
      const fsync = await fsyncCeiling(quick ? 500 : 3000);
      rmSync(cwd, { recursive: true, force: true });

      const extra = {
        clients: clientsN,
        in_flight_per_client: inflight,
        sessions: sessionsN,
        measured_ms: measureMs,
        rounds,
        admissions_measured: admit.latenciesMs.length,
        daemon_cpu_ms_per_admission: Number((daemonCpu / offset).toFixed(3)),
        echo_cpu_ms_per_call: Number((echoCpu / echoAll.completed).toFixed(3)),
      };
      return [
        figure({
          bench: 'gateway',
          name: 'admissions/s vs FULL-sync single-row inserts',
          value: admit.perSecond,
          unit: '/s',
          baseline: { name: 'raw single-row FULL-sync insert', value: fsync },
          aim: { op: '>=', ratio: 10 },
          extra,
        }),
        figure({
          bench: 'gateway',
          name: 'admissions per log flush (group commit)',
          value: operations / Math.max(1, flushes),
          unit: 'ops',
          // The single-row loop pays one flush per row.
          baseline: { name: 'rows per flush, single-row FULL commits', value: 1 },
          extra: { committed_operations: operations, log_flushes: flushes },
        }),
        figure({
          bench: 'gateway',
          name: 'admissions/s vs WebSocket echo',
          value: admit.perSecond,
          unit: '/s',
          baseline: { name: 'JSON-RPC echo, same harness', value: echoAll.perSecond },
          aim: { op: '>=', ratio: 0.4 },
          extra,
        }),
        figure({
          bench: 'gateway',
          name: 'admission ack p99',
          value: percentile(admit.latenciesMs, 99),
          unit: 'ms',
          baseline: { name: 'echo round trip p99', value: percentile(echoAll.latenciesMs, 99) },
          higherIsBetter: false,
          extra: {
            admission_p50_ms: percentile(admit.latenciesMs, 50),
            echo_p50_ms: percentile(echoAll.latenciesMs, 50),
          },
        }),
      ];
    } finally {
      await Promise.all(echoClients.map((c) => c.close().catch(() => undefined)));
      await echo.close();
      // Released first so the daemon's drain on SIGTERM finds only short turns.
      demo.release();
      await daemon.close();
      await demo.close();
    }
  },
};

export default bench;
