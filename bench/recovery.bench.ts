/**
 * Cold recovery (issue 5): a home holding many stored sessions and a large queue of admissions that
 * never started, built straight into state.db through the store's own operations (valid receipts,
 * routes and rows). Measures, against baselines from the same run:
 *  - time from `gatehouse serve` spawn to ready, versus an empty home (aim <= 3x: recovery cost must
 *    follow what is queued, not the stored history);
 *  - the turn rate while the recovered queue drains, versus the steady-state turn rate of the same
 *    daemon fed over RPC afterwards (aim >= 0.8x), with the zero-latency demo model.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { homeLayout } from '../src/daemon/home.js';
import { submissionDigest } from '../src/domain/local/admission.js';
import { creationDigest, freezeLaunchPolicy } from '../src/domain/local/launch-policy.js';
import { RECEIPT_KIND, type CreationReceipt } from '../src/domain/local/receipt.js';
import { SessionSource } from '../src/domain/session/source.js';
import type { SessionSourceFields } from '../src/domain/vocabulary.js';
import { startDemoModel } from '../src/runtime/demo/server.js';
import { requestTicket } from '../src/surfaces/control/client.js';
import { GatewayClient } from '../src/surfaces/client/rpc-client.js';
import { SqliteLocalStore } from '../src/storage/sqlite/local-store.js';
import type { NewAdmission } from '../src/domain/ports/local-store.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { figure, percentile, type Bench } from './lib.js';
import { emptyLookups, oneProvider } from '../test/fixtures/launch-fixtures.js';

const CLI = resolve(import.meta.dirname, '../dist/surfaces/cli/main.js');
const OWNER = { subject: 'owner', provider: 'native' };

function origin(id: string): SessionSourceFields {
  return new SessionSource({ platform: 'local', chat_id: id }).toJSON();
}

/** Writes `sessions` local sessions and `queued` admissions over the first `queuedSessions` of them. */
async function populate(file: string, cwd: string, sessions: number, queued: number, queuedSessions: number) {
  const store = SqliteSessionStore.open(file);
  const local = new SqliteLocalStore(store.db);
  store.db.pragma('synchronous = OFF'); // building the fixture only; the daemon runs with FULL
  const params = { cwd, model: 'gatehouse-demo' };
  const policy = freezeLaunchPolicy(
    params,
    {
      cwd,
      model: 'gatehouse-demo',
      toolsets: [],
      knownToolsets: [],
      maxTurns: 10,
      providers: oneProvider(),
      offerSkills: false,
    },
    emptyLookups(),
  );
  const digest = creationDigest(params);
  const ids: string[] = [];
  const admissions: NewAdmission[] = [];
  const created: Promise<unknown>[] = [];
  // One outer transaction: the store's own transactions nest as savepoints.
  store.db.transaction(() => {
    for (let i = 0; i < sessions; i++) {
      const id = `20260101_000000_${i.toString(16).padStart(8, '0')}`;
      ids.push(id);
      const receipt: CreationReceipt = {
        kind: RECEIPT_KIND,
        logical_id: id,
        current_session_id: id,
        owner: OWNER,
        profile: 'default',
        request_id: null,
        creation_digest: digest,
        policy,
        lineage: [],
        created_at: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
      };
      // SQLite's store runs each call at once, inside this transaction; its answers are awaited after.
      created.push(local.commitCreation({ receipt, origin: origin(id), title: null, hidden: false }));
    }
    const perSession = Math.ceil(queued / queuedSessions);
    for (let n = 0; n < queued; n++) {
      const sessionIndex = Math.floor(n / perSession);
      admissions.push({
        admission_id: `adm-${n}`,
        logical_id: ids[sessionIndex]!,
        submission_id: `sub-${n}`,
        submitter: OWNER,
        profile: 'default',
        digest: submissionDigest(`queued ${n}`),
        text: `queued ${n}`,
        binding: null,
      });
    }
  })();
  await Promise.all(created);
  // Group commit batches these (512 to a transaction).
  await Promise.all(admissions.map((a) => local.admit(a)));
  await store.close();
}

async function serve(home: string): Promise<{ readyMs: number; stop: () => Promise<void>; url: string }> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  await new Promise<void>((ready, fail) => {
    let seen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      if (seen.includes('Gatehouse is ready at')) ready();
    });
    void exited.then(() => fail(new Error('daemon exited before ready')));
  });
  const readyMs = performance.now() - started;
  const { url } = JSON.parse(readFileSync(homeLayout(home).gatewayJson, 'utf8')) as { url: string };
  return {
    readyMs,
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function unsettled(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (
      db.prepare(`SELECT count(*) AS n FROM admissions WHERE state IN ('queued', 'running')`).get() as {
        n: number;
      }
    ).n;
  } finally {
    db.close();
  }
}

async function waitDrained(file: string): Promise<void> {
  while (unsettled(file) > 0) await sleep(100);
}

const bench: Bench = {
  name: 'recovery',
  async run({ quick }) {
    const sessions = quick ? 10_000 : 100_000;
    const queued = quick ? 1_000 : 10_000;
    const queuedSessions = quick ? 100 : 1_000;
    const steadyTurns = quick ? 500 : 3_000;
    const root = mkdtempSync(join(tmpdir(), 'gh-bench-recovery-'));
    const demo = await startDemoModel({ latencyMs: 0, record: false });
    const cwd = join(root, 'cwd');
    mkdirSync(cwd);
    const config = `model: {base_url: ${JSON.stringify(demo.baseUrl)}, model: gatehouse-demo}\n`;
    const home = (name: string) => {
      const dir = join(root, name);
      mkdirSync(join(dir, 'profiles', 'default'), { recursive: true, mode: 0o700 });
      writeFileSync(join(dir, 'config.yaml'), config, { mode: 0o600 });
      return dir;
    };
    try {
      const full = home('full');
      const fullDb = homeLayout(full).stateDb('default');
      const built = performance.now();
      await populate(fullDb, cwd, sessions, queued, queuedSessions);
      const buildMs = performance.now() - built;

      const emptyReady: number[] = [];
      for (let i = 0; i < 3; i++) {
        const d = await serve(home(`empty-${i}`));
        emptyReady.push(d.readyMs);
        await d.stop();
      }
      const emptyMs = percentile(
        [...emptyReady].sort((a, b) => a - b),
        50,
      );

      const d = await serve(full);
      const drainStart = performance.now();
      await waitDrained(fullDb);
      const drainMs = performance.now() - drainStart;
      const drainRate = queued / (drainMs / 1000);

      // Steady state: the same daemon, fed over RPC by one client, as many sessions in parallel.
      const { ticket } = await requestTicket(homeLayout(full).controlSocket, 'interactive');
      const client = await GatewayClient.connect(d.url, ticket);
      const ids: string[] = [];
      for (let i = 0; i < queuedSessions / 10; i++) {
        ids.push((await client.call<{ session_id: string }>('session.create', { cwd })).session_id);
      }
      const steadyStart = performance.now();
      await Promise.all(
        Array.from({ length: steadyTurns }, (_, n) =>
          client.call('prompt.submit', {
            session_id: ids[n % ids.length],
            submission_id: `steady-${n}`,
            text: `steady ${n}`,
          }),
        ),
      );
      await waitDrained(fullDb);
      const steadyMs = performance.now() - steadyStart;
      const steadyRate = steadyTurns / (steadyMs / 1000);
      await client.close();
      await d.stop();

      return [
        figure({
          bench: 'recovery',
          name: `ready with ${sessions} sessions + ${queued} queued`,
          value: d.readyMs,
          unit: 'ms',
          baseline: { name: 'ready, empty home', value: emptyMs },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 3 },
          extra: { fixture_build_ms: Math.round(buildMs) },
        }),
        figure({
          bench: 'recovery',
          name: `drain of ${queued} recovered admissions`,
          value: drainRate,
          unit: 'turns/s',
          baseline: { name: 'steady-state turns/s', value: steadyRate },
          aim: { op: '>=', ratio: 0.8 },
          extra: { drain_ms: Math.round(drainMs), steady_turns: steadyTurns },
        }),
      ];
    } finally {
      await demo.close();
      rmSync(root, { recursive: true, force: true });
    }
  },
};

export default bench;
