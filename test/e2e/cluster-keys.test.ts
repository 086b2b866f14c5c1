/**
 * A session's api_key in a cluster (LOC-5, SCL-1): the key given to `session.create` lives only in
 * the memory of the instance that created the session, so that instance keeps the session's lease
 * and runs its turns wherever they are submitted — the model sees the key in its Authorization
 * header. Once it is gone (SIGKILL, graceful stop) the session is taken over like any other and its
 * next turn fails with `launch_credentials_unavailable`, exactly as after a restart; repeating the
 * creation with the key on a live instance brings it back there. The key reaches no row of the
 * schema and no file of any instance's home (database files, logs, gateway.json).
 */
import { existsSync, readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ADMISSION_HEADER } from '../../src/runtime/runner.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { nextEvent } from './gateway-harness.js';
import { filesHolding } from './leaks.js';
import { modelConfig, RecoveryRig, tempDir, type Ack, type Snapshot } from './recovery-harness.js';

/** The error lines (level 50 and up) of a daemon's JSON log, one per line: a failed assertion's message. */
function loggedErrors(logFile: string): string {
  const lines = existsSync(logFile) ? readFileSync(logFile, 'utf8').split('\n') : [];
  return lines.filter((line) => /"level":(5|6)\d/.test(line)).join('\n') || 'no error in the log';
}

beforeAll(requireBuild);

const TIMEOUT = 240_000;
/** Long enough for a dead owner's lease (10 s, the cluster harness's default) to expire and be taken over on a loaded machine. */
const SETTLE_MS = 60_000;
const KEY = 'sk-gatehouse-cluster-SECRET-4b1e7d';

const rig = new RecoveryRig();
let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = null;
  await rig.cleanup();
});

/** Submits on `on` and waits, as `viewer` sees it, for the turn's `turn.complete`. */
async function turn(
  on: GatewayClient,
  viewer: GatewayClient,
  session_id: string,
  submission_id: string,
): Promise<{ admission_id: string; complete: Record<string, unknown> }> {
  const done = nextEvent(
    viewer,
    'turn.complete',
    (e) => e.session_id === session_id && e.event.admission_id !== undefined,
    SETTLE_MS,
  );
  const ack = await on.call<Ack>('prompt.submit', { session_id, submission_id, text: submission_id });
  const complete = (await done).event;
  expect(complete.admission_id).toBe(ack.admission_id);
  return { admission_id: ack.admission_id, complete };
}

/** The epoch of the instance that ran an admission (its row's claim). */
async function ranOn(c: TestCluster, admissionId: string): Promise<number> {
  const rows = await c.sql<{ epoch: string }>('SELECT epoch FROM admissions WHERE admission_id = $1', [
    admissionId,
  ]);
  return Number(rows[0]!.epoch);
}

/** The Authorization header of every model request of an admission. */
const authorizations = (demo: DemoModelServer, admissionId: string): (string | undefined)[] =>
  demo.requests
    .filter((r) => r.headers[ADMISSION_HEADER] === admissionId)
    .map((r) => r.headers.authorization);

/** The key is in no row of any table of the schema, nor in any file of any instance's home. */
async function expectNoTrace(c: TestCluster, secret: string, stored: string): Promise<void> {
  const tables = await c.sql<{ table_name: string }>(
    `SELECT table_name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`,
  );
  expect(tables.map((t) => t.table_name)).toEqual(
    expect.arrayContaining(['admissions', 'cluster_leases', 'session_events']),
  );
  const holding = async (needle: string): Promise<string[]> => {
    const found: string[] = [];
    for (const { table_name } of tables) {
      // A row cast to text holds every column of it.
      const rows = await c.sql<{ n: string }>(
        `SELECT count(*) AS n FROM "${table_name}" t WHERE strpos(t::text, $1) > 0`,
        [needle],
      );
      if (Number(rows[0]!.n) > 0) found.push(table_name);
    }
    return found;
  };
  expect(await holding(secret)).toEqual([]);
  expect(await holding(stored)).toContain('messages'); // the search does find what is there
  for (const node of c.nodes) expect(filesHolding(node.home, secret)).toEqual([]);
}

describe('LOC-5 a session api_key in a cluster', () => {
  it(
    "runs the session's turns on the instance holding the key wherever they are submitted; after a SIGKILL of that instance they fail with launch_credentials_unavailable",
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ config: modelConfig(demo) });
      const c = cluster;
      const [a, b, cc] = [c.daemon(0).epoch, c.daemon(1).epoch, c.daemon(2).epoch];
      const onA = await c.daemon(0).connect();
      const created = { request_id: 'keyed', cwd: tempDir(), api_key: KEY };
      const keyed = (await onA.call<Snapshot>('session.create', created)).session_id;
      const plain = (await onA.call<Snapshot>('session.create', { request_id: 'plain', cwd: tempDir() }))
        .session_id;
      // A took the keyed session's lease with its creation, before answering.
      const lease = await c.lease(keyed);
      expect(lease?.owner_epoch).toBe(a);

      // (a) Submitted on B, or on C, each turn runs on A, with the key.
      const onB = await c.daemon(1).connect();
      const onC = await c.daemon(2).connect();
      for (const viewer of [onB, onC]) {
        await viewer.call('session.resume', { session_id: keyed });
        await viewer.call('session.resume', { session_id: plain });
      }
      const k1 = await turn(onB, onB, keyed, 'k1');
      const k2 = await turn(onC, onB, keyed, 'k2');
      for (const k of [k1, k2]) {
        expect(k.complete).toMatchObject({ outcome: 'completed' });
        expect(await ranOn(c, k.admission_id)).toBe(a);
        expect(authorizations(demo, k.admission_id)).toEqual([`Bearer ${KEY}`]);
      }
      // A kept the lease while the session was idle between them: never another owner.
      expect(await c.lease(keyed)).toEqual(lease);
      // So a control sent to B is relayed to A, and the lease stays with A; repeated on A, it is
      // the same undo (idempotent by request id).
      const undo = { session_id: keyed, request_id: 'u1' };
      await expect(onB.call('session.undo', undo)).resolves.toMatchObject({
        turns_undone: 1,
        duplicate: false,
      });
      await expect(onA.call('session.undo', undo)).resolves.toMatchObject({
        turns_undone: 1,
        duplicate: true,
      });
      expect(await c.lease(keyed)).toEqual(lease);

      // (b) A is SIGKILLed: its lease expires, B or C takes the session over, and the turn fails as
      // after a restart — no model request, a clear reason — while everything else goes on.
      await c.kill(0);
      const seen = demo.requests.length;
      const k3 = await turn(onB, onB, keyed, 'k3');
      expect(k3.complete).toMatchObject({
        outcome: 'failed',
        error: { reason: 'launch_credentials_unavailable' },
      });
      expect(demo.requests.length).toBe(seen);
      expect([b, cc]).toContain(await ranOn(c, k3.admission_id));
      const p1 = await turn(onC, onC, plain, 'p1');
      expect(p1.complete).toMatchObject({ outcome: 'completed' });
      expect(authorizations(demo, p1.admission_id)).toEqual([undefined]);
      const snap = await onC.call<Snapshot>('session.resume', { session_id: keyed });
      expect(snap).toMatchObject({ state: 'idle', paused_reason: null, pending_admissions: [] });

      // The documented remedy: repeat the creation with the key, here on B. B takes the lease once it
      // is free and keeps it; a turn submitted on C runs on B with the key.
      expect((await onB.call<Snapshot>('session.create', created)).session_id).toBe(keyed);
      await c.until(
        'B holds the keyed session',
        () => c.lease(keyed),
        (l) => l?.owner_epoch === b,
      );
      const k4 = await turn(onC, onC, keyed, 'k4');
      expect(k4.complete).toMatchObject({ outcome: 'completed' });
      expect(await ranOn(c, k4.admission_id)).toBe(b);
      expect(authorizations(demo, k4.admission_id)).toEqual([`Bearer ${KEY}`]);

      // (c) Stopped cleanly (logs flushed), no instance left the key in the database or its home.
      for (const i of [1, 2]) {
        const d = c.daemon(i);
        // A stop that exits 1 logged why (a service that failed to stop): say it with the failure.
        expect(await d.stop(), loggedErrors(d.layout.logFile)).toBe(0);
      }
      await expectNoTrace(c, KEY, 'k4');
    },
    TIMEOUT,
  );

  it(
    'a graceful stop of the instance holding the key hands the session over at once; its next turn fails with launch_credentials_unavailable',
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ size: 2, config: modelConfig(demo) });
      const c = cluster;
      const onA = await c.daemon(0).connect();
      const keyed = (
        await onA.call<Snapshot>('session.create', { request_id: 'keyed', cwd: tempDir(), api_key: KEY })
      ).session_id;
      const onB = await c.daemon(1).connect();
      await onB.call('session.resume', { session_id: keyed });
      const k1 = await turn(onB, onB, keyed, 'k1');
      expect(await ranOn(c, k1.admission_id)).toBe(c.daemon(0).epoch);
      expect(authorizations(demo, k1.admission_id)).toEqual([`Bearer ${KEY}`]);

      // The drain releases the lease like any other (the key goes with the instance).
      expect(await c.daemon(0).stop()).toBe(0);
      expect((await c.lease(keyed))?.owner_epoch).toBeNull();
      const seen = demo.requests.length;
      const k2 = await turn(onB, onB, keyed, 'k2');
      expect(k2.complete).toMatchObject({
        outcome: 'failed',
        error: { reason: 'launch_credentials_unavailable' },
      });
      expect(String((k2.complete.error as { message: string }).message)).toContain('request_id');
      expect(await ranOn(c, k2.admission_id)).toBe(c.daemon(1).epoch);
      expect(demo.requests.length).toBe(seen);
      // B does not hold the key, so the session's lease is free again once its queue is empty.
      await c.until(
        'B releases the idle session',
        () => c.lease(keyed),
        (l) => l?.owner_epoch === null,
      );

      expect(await c.daemon(1).stop()).toBe(0);
      await expectNoTrace(c, KEY, 'k2');
    },
    TIMEOUT,
  );
});
