/**
 * Several gateways on one PostgreSQL (SCL-1, issue 14 "Several instances"): three real daemons on
 * one schema. A session runs only on the instance holding its lease; work admitted elsewhere wakes
 * that owner; a SIGKILLed owner's sessions are taken over once its lease expires and recovered as a
 * cold start would (REC-7); a pending approval is answered on the new owner; a graceful stop hands
 * its sessions over without waiting for expiry; an instance cut off from the database stops its
 * turns and exits, and the takeover does not run them again. Across processes there is no event to
 * wait on, so the tests poll the database.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { exited, requireBuild, runCli, tempHome } from './cli.js';
import { startCluster, type TestCluster } from './cluster-harness.js';
import { nextEvent, waitForState, writeConfig } from './gateway-harness.js';
import {
  modelConfig,
  ranLog,
  RecoveryRig,
  tempDir,
  turnStarts,
  type Ack,
  type Snapshot,
} from './recovery-harness.js';

beforeAll(requireBuild);

/** Three daemons start one after the other on a loaded machine: generous. */
const TIMEOUT = 240_000;
const rig = new RecoveryRig();
let cluster: TestCluster | null = null;
afterEach(async () => {
  await cluster?.cleanup();
  cluster = null;
  await rig.cleanup();
});

interface Row extends Record<string, unknown> {
  admission_id: string;
  state: string;
  epoch: string | null;
  resumes: number;
}

const admissions = (c: TestCluster) =>
  c.sql<Row>('SELECT admission_id, state, epoch, resumes FROM admissions ORDER BY seq');
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

const settled = (rows: Row[]) => rows.every((r) => !['queued', 'running'].includes(r.state));

describe('a cluster of three instances on one database', () => {
  it(
    'runs a session on its owner (work admitted elsewhere runs there too), and takes over after a SIGKILL',
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ config: modelConfig(demo) });
      const c = cluster;
      const onA = await c.daemon(0).connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd: tempDir(), yolo: true });
      // Any instance serves the session: B resumes it.
      const onB = await c.daemon(1).connect();
      await expect(onB.call('session.resume', { session_id })).resolves.toMatchObject({ session_id });

      // A takes the lease with its first turn; C's submission, committed on C, wakes A and runs there.
      demo.hold();
      const one = await onA.call<Ack>('prompt.submit', { session_id, submission_id: 'one', text: 'first' });
      await demo.waitForRequests(1);
      expect((await c.lease(session_id))?.owner_epoch).toBe(c.daemon(0).epoch);
      const onC = await c.daemon(2).connect();
      const two = await onC.call<Ack>('prompt.submit', { session_id, submission_id: 'two', text: 'second' });
      demo.release();
      let rows = await c.until('both turns settle', () => admissions(c), settled);
      expect(rows.map((r) => [r.admission_id, r.state, Number(r.epoch)])).toEqual([
        [one.admission_id, 'completed', c.daemon(0).epoch],
        [two.admission_id, 'completed', c.daemon(0).epoch],
      ]);

      // A runs a turn and holds a queued one when it is SIGKILLed.
      demo.hold();
      const before = demo.requests.length;
      const three = await onA.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'three',
        text: 'third',
      });
      await demo.waitForRequests(before + 1);
      const owner = await c.lease(session_id);
      expect(owner?.owner_epoch).toBe(c.daemon(0).epoch);
      const four = await onC.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'four',
        text: 'fourth',
      });
      await c.kill(0);
      demo.release();

      // B or C takes the lease under a new token once A's expires, and recovers the session as a cold
      // start would: the started turn resumes at its model boundary (REC-7), the queued one runs once.
      await c.until(
        'another instance takes the lease',
        () => c.lease(session_id),
        (l) => l !== null && l.token > owner!.token,
      );
      rows = await c.until('the turns settle after the takeover', () => admissions(c), settled);
      const survivors = [c.daemon(1).epoch, c.daemon(2).epoch];
      const after = rows.slice(2);
      expect(after.map((r) => r.admission_id)).toEqual([three.admission_id, four.admission_id]);
      expect(['completed', 'unknown']).toContain(after[0]!.state);
      if (after[0]!.state === 'completed') expect(after[0]!.resumes).toBe(1);
      expect(after[1]).toMatchObject({ state: 'completed', resumes: 0 });
      expect(survivors).toContain(Number(after[1]!.epoch));
      expect(turnStarts(demo, four.admission_id)).toBe(1);
      expect(turnStarts(demo, two.admission_id)).toBe(1);
    },
    TIMEOUT,
  );

  it(
    'an approval pending on a SIGKILLed owner is asked again by the new owner and answered there; the command runs once',
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ config: modelConfig(demo) });
      const c = cluster;
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(victim);
      writeFileSync(join(victim, 'file.txt'), 'owned by the test');
      const onA = await c.daemon(0).connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd });
      await onA.call('session.resume', { session_id });
      const asked = nextEvent(onA, 'approval.request');
      await onA.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'rm',
        text: `run: rm -rf ${victim} && echo deleted >> ran.log`,
      });
      const prompt = (await asked).event;
      // The owner is the instance holding the lease now: A took it at creation, but on a starved
      // machine A can miss a renewal and another instance take the session over before this line.
      const owner = await c.lease(session_id);
      expect(owner?.owner_epoch).not.toBeNull();
      const holder = c.byEpoch(owner!.owner_epoch!);
      expect(holder).toBeGreaterThanOrEqual(0);
      await c.kill(holder);

      const taken = await c.until(
        'another instance takes the lease',
        () => c.lease(session_id),
        (l) => l !== null && l.token > owner!.token && l.owner_epoch !== null,
      );
      const next = c.byEpoch(taken!.owner_epoch!);
      expect([0, 1, 2].filter((k) => k !== holder)).toContain(next);
      const client = await c.daemon(next).connect();
      const recreated = nextEvent(client, 'approval.request').catch(() => null);
      const snap = await client.call<
        Snapshot & { prompts: { prompt_id: string; execution_generation: number }[] }
      >('session.resume', { session_id });
      const again =
        snap.prompts.find((p) => p.prompt_id === prompt['prompt_id']) ??
        ((await recreated)?.event as unknown as
          { prompt_id: string; execution_generation: number } | undefined);
      expect(again?.prompt_id).toBe(prompt['prompt_id']);
      expect(existsSync(victim)).toBe(true);
      const complete = nextEvent(client, 'turn.complete');
      await expect(
        client.call('approval.respond', {
          session_id,
          prompt_id: again!.prompt_id,
          execution_generation: again!.execution_generation,
          choice: 'once',
        }),
      ).resolves.toMatchObject({ status: 'resolved' });
      expect((await complete).event).toMatchObject({ outcome: 'completed' });
      expect(existsSync(victim)).toBe(false);
      expect(ranLog(cwd)).toEqual(['deleted']);
    },
    TIMEOUT,
  );

  it(
    'a graceful stop hands the owner’s sessions over at once, without waiting for the lease to expire',
    async () => {
      const demo = await rig.model();
      // A lease far longer than the test: only the handover can move the session.
      cluster = await startCluster({ config: modelConfig(demo), leaseS: 300 });
      const c = cluster;
      const onA = await c.daemon(0).connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd: tempDir(), yolo: true });
      demo.hold();
      const one = await onA.call<Ack>('prompt.submit', { session_id, submission_id: 'one', text: 'first' });
      await demo.waitForRequests(1);
      const onB = await c.daemon(1).connect();
      const two = await onB.call<Ack>('prompt.submit', { session_id, submission_id: 'two', text: 'second' });
      // `gatehouse stop` while the turn is held: A drains (refusing new work), then the model answers.
      const a = c.daemon(0);
      const stopped = runCli(c.nodes[0]!.home, ['stop']);
      await waitForState(a.url, 'draining', 60_000);
      demo.release();
      expect((await stopped).code).toBe(0);
      expect(await exited(a.child)).toBe(0);
      const rows = await c.until('both turns settle', () => admissions(c), settled);
      expect(rows.map((r) => [r.admission_id, r.state])).toEqual([
        [one.admission_id, 'completed'],
        [two.admission_id, 'completed'],
      ]);
      expect(Number(rows[0]!.epoch)).toBe(c.daemon(0).epoch);
      expect([c.daemon(1).epoch, c.daemon(2).epoch]).toContain(Number(rows[1]!.epoch));
      expect(turnStarts(demo, two.admission_id)).toBe(1);
      const stoppedRow = await c.sql<{ stopped: boolean }>(
        'SELECT stopped_at IS NOT NULL AS stopped FROM cluster_instances WHERE epoch = $1',
        [c.daemon(0).epoch],
      );
      expect(stoppedRow).toEqual([{ stopped: true }]);
    },
    TIMEOUT,
  );

  it(
    'an instance cut off from the database stops its running turn and exits; the takeover does not run it again',
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ config: modelConfig(demo) });
      const c = cluster;
      const cwd = tempDir();
      const onA = await c.daemon(0).connect();
      const { session_id } = await onA.call<Snapshot>('session.create', { cwd, yolo: true });
      await onA.call<Ack>('prompt.submit', {
        session_id,
        submission_id: 'slow',
        text: 'run: echo $$ > pid; echo start >> ran.log; sleep 60; echo end >> ran.log',
      });
      await c.until(
        'the command starts',
        () => ranLog(cwd),
        (lines) => lines.includes('start'),
      );
      const owner = await c.lease(session_id);
      const a = c.daemon(0);
      const pgid = Number(readFileSync(join(cwd, 'pid'), 'utf8').trim());
      await c.sql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE $1`, [
        `%gatehouse% ${c.instanceId(0).slice(0, 8)}`,
      ]);
      // A notices at once: it stops the command and exits non-zero for a supervisor to restart it.
      expect(await exited(a.child)).not.toBe(0);
      // Its command's process group is gone (the sleep would have run on for a minute).
      await c.until(
        'the command is stopped',
        () => groupAlive(pgid),
        (alive) => !alive,
        20_000,
      );
      const log = readFileSync(a.layout.logFile, 'utf8');
      expect(log).toContain('cluster: the database connection was lost');
      // Another instance takes the session over after the lease expires; the command's effect is
      // unknown (it ran), so the turn becomes `unknown` (REC-7 tool_running), never run again.
      await c.until(
        'another instance takes the lease',
        () => c.lease(session_id),
        (l) => l !== null && l.token > owner!.token,
      );
      const rows = await c.until('the turn is settled by the takeover', () => admissions(c), settled);
      expect(rows).toMatchObject([{ state: 'unknown' }]);
      expect(ranLog(cwd)).toEqual(['start']);
      expect(turnStarts(demo, rows[0]!.admission_id)).toBe(1);
    },
    TIMEOUT,
  );

  it(
    'status shows the cluster; cluster.enabled is refused without postgres',
    async () => {
      const demo = await rig.model();
      cluster = await startCluster({ config: modelConfig(demo), size: 2 });
      // Each instance rewrites its view at every scan (every lease_s): a's first one predates b.
      const report = await cluster.until(
        'a sees both instances',
        async () =>
          JSON.parse((await runCli(cluster!.nodes[0]!.home, ['status', '--json'])).stdout) as {
            store: string;
            cluster: { instances: { name: string; heartbeat_age_ms: number }[]; lease_s: number };
          },
        (r) => r.cluster.instances.length === 2,
      );
      expect(report.store).toContain('postgres');
      expect(report.cluster.lease_s).toBe(10);
      expect(report.cluster.instances.map((i) => i.name)).toEqual(['a', 'b']);
      const text = await runCli(cluster.nodes[1]!.home, ['status']);
      expect(text.stdout).toMatch(/cluster: 2 instances, lease 10 s/);
      expect(text.stdout).toMatch(/b \(this\) epoch \d+/);

      const home = tempHome();
      writeConfig(home, 'cluster: {enabled: true}');
      const refused = await runCli(home, ['serve']);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('cluster.enabled');
      expect(refused.stderr).toContain('needs store.kind: postgres');
    },
    TIMEOUT,
  );
});
