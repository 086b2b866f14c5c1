/**
 * Durable admissions (issue 4): many WebSocket clients keep several `prompt.submit` calls in flight
 * each, spread over many sessions, while the model is held at its barrier so no turn finishes and
 * only admission (validate, group-commit with FULL sync, acknowledge) is measured.
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
import { configFor, createSessions, startBenchDaemon, tempDir } from './gateway-daemon.js';
import { figure, percentile, rate, type Bench } from './lib.js';

const here = path.dirname(fileURLToPath(import.meta.url));

interface DriveResult {
  perSecond: number;
  latenciesMs: number[];
  completed: number;
}

/**
 * The client harness: every client keeps `inflight` calls outstanding for `warmMs + measureMs`;
 * calls that finish inside the measuring window count, and their latencies are kept.
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
      if (t >= from && end <= until) latencies.push(end - t);
    }
  };
  await Promise.all(clients.flatMap((c) => Array.from({ length: inflight }, () => loop(c))));
  latencies.sort((a, b) => a - b);
  return { perSecond: latencies.length / (measureMs / 1000), latenciesMs: latencies, completed: n };
}

async function startEcho(): Promise<{ url: string; close(): Promise<void> }> {
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
    const warmMs = quick ? 200 : 1000;
    const measureMs = quick ? 700 : 5000;
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
      const admitted = await drive(clients, inflight, warmMs, measureMs, (client, n) =>
        client.call('prompt.submit', {
          session_id: sessions[n % sessions.length],
          submission_id: `b-${n}`,
          text,
        }),
      );

      for (let i = 0; i < clientsN; i++) echoClients.push(await GatewayClient.connect(echo.url, 'echo'));
      const echoed = await drive(echoClients, inflight, warmMs, measureMs, (client, n) =>
        client.call('prompt.submit', {
          session_id: sessions[n % sessions.length],
          submission_id: `b-${n}`,
          text,
        }),
      );
      const fsync = await fsyncCeiling(quick ? 500 : 3000);
      rmSync(cwd, { recursive: true, force: true });

      const extra = {
        clients: clientsN,
        in_flight_per_client: inflight,
        sessions: sessionsN,
        measured_ms: measureMs,
        admissions_measured: admitted.latenciesMs.length,
      };
      return [
        figure({
          bench: 'gateway',
          name: 'admissions/s vs FULL-sync single-row inserts',
          value: admitted.perSecond,
          unit: '/s',
          baseline: { name: 'raw single-row FULL-sync insert', value: fsync },
          aim: { op: '>=', ratio: 10 },
          extra,
        }),
        figure({
          bench: 'gateway',
          name: 'admissions/s vs WebSocket echo',
          value: admitted.perSecond,
          unit: '/s',
          baseline: { name: 'JSON-RPC echo, same harness', value: echoed.perSecond },
          aim: { op: '>=', ratio: 0.4 },
          extra,
        }),
        figure({
          bench: 'gateway',
          name: 'admission ack p99',
          value: percentile(admitted.latenciesMs, 99),
          unit: 'ms',
          baseline: { name: 'echo round trip p99', value: percentile(echoed.latenciesMs, 99) },
          higherIsBetter: false,
          extra: {
            admission_p50_ms: percentile(admitted.latenciesMs, 50),
            echo_p50_ms: percentile(echoed.latenciesMs, 50),
          },
        }),
      ];
    } finally {
      await Promise.all(echoClients.map((c) => c.close().catch(() => undefined)));
      await echo.close();
      await daemon.close();
      demo.release();
      await demo.close();
    }
  },
};

export default bench;
