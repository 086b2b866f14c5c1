/**
 * Scheduled jobs through the real daemon on both stores (issue 28, docs/scheduling.md), on the
 * test-only clock: a per-minute job fires exactly once across a SIGKILL at each step, missed runs
 * follow the catch-up policy after downtime, an overlapping run is skipped or queued, a run that
 * ended unknown is never re-run and pauses its job, and bad input is refused with nothing changed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS, waitForState } from './gateway-harness.js';
import {
  died,
  modelConfig,
  tempDir,
  turnStarts,
  useRecoveryRig,
  useSharedRig,
  type Snapshot,
} from './recovery-harness.js';
import { jobOf, jobUntil, runsIn, settledAt, TestClock, type Job } from './jobs-harness.js';
import { RpcCallError, type GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import type { DemoModelServer } from '../../src/runtime/demo/server.js';

const rig = useRecoveryRig();

const T0 = '2026-03-02T08:00:30.000Z';
const minute = (m: number) => `2026-03-02T08:${String(m).padStart(2, '0')}:00.000Z`;
const after = (m: number) => `2026-03-02T08:${String(m).padStart(2, '0')}:05.000Z`;

async function everyMinute(
  client: GatewayClient,
  sessionId: string,
  text: string,
  extra: Record<string, unknown> = {},
): Promise<Job> {
  const { job } = await client.call<{ job: Job }>('jobs.add', {
    request_id: `add-${text}`,
    cron: '* * * * *',
    session_id: sessionId,
    text,
    ...extra,
  });
  return job;
}

/** Every model request of the session whose job runs `text` (its runs are its only user messages). */
function requestsOf(demo: DemoModelServer, text: string): number {
  return demo.requests.filter((r) =>
    (r.body?.messages ?? []).some((m) => m.role === 'user' && m.content === text),
  ).length;
}

describe.each(BACKENDS)('scheduled jobs on %s', (store) => {
  beforeAll(() => {
    rig.store = store;
  });

  const steps = [
    { name: 'before the admission commit (job.decided)', faults: 'job.decided' },
    {
      name: 'after the admission commit, before its turn (admission.committed)',
      faults: 'admission.committed',
    },
    { name: 'during the turn (SIGKILL while the model answers)', faults: null },
  ];
  it.each(steps)('a per-minute job fires exactly once across a SIGKILL $name', async ({ faults }) => {
    const demo = await rig.model();
    const config = modelConfig(demo);
    const clock = new TestClock(tempDir(), T0);
    let d = await rig.daemon({
      config,
      env: { ...clock.env(), ...(faults ? { GATEHOUSE_TEST_FAULTS: faults } : {}) },
    });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', { request_id: 's', cwd: tempDir() });
    const job = await everyMinute(client, session_id, 'minute report');
    expect(job.next_run).toBe(minute(1));

    if (faults === null) demo.hold();
    clock.set(after(1));
    if (faults === null) {
      await demo.waitForRequests(1);
      await d.kill();
    } else await died(d);
    demo.release();

    d = await rig.daemon({ home: d.home, config, env: clock.env() });
    client = await d.connect();
    const fired = await jobUntil(client, job.job_id, settledAt(minute(1)));
    expect(fired.last_run!.outcome).toBe('completed');
    const first = await runsIn(client, session_id, 'minute report');
    expect(first).toHaveLength(1);
    expect(first[0]).toBe(fired.last_run!.admission_id);
    // The resumed turn (a SIGKILL during the model call) asks the model again; a turn is never started twice.
    expect(turnStarts(demo, first[0]!)).toBeGreaterThanOrEqual(1);

    // The timer goes on after the crash: the next minute fires once more, and only once.
    clock.set(after(2));
    await jobUntil(client, job.job_id, settledAt(minute(2)));
    const both = await runsIn(client, session_id, 'minute report');
    expect(both).toHaveLength(2);
    expect(new Set(both).size).toBe(2);
    expect((await jobOf(client, job.job_id)).next_run).toBe(minute(3));
  });

  describe('catch-up after five missed minutes (one daemon, a job per policy, one restart)', () => {
    const shared = useSharedRig();
    const policies = [
      { catch_up: 'none', overlap: 'skip', freshness_s: 3600, fired: [] as string[] },
      { catch_up: 'last', overlap: 'skip', freshness_s: 3600, fired: [minute(5)] },
      { catch_up: 'all', overlap: 'queue', freshness_s: 3600, fired: [1, 2, 3, 4, 5].map(minute) },
      { catch_up: 'all', overlap: 'queue', freshness_s: 120, fired: [minute(4), minute(5)] },
    ];
    const textOf = (p: (typeof policies)[number]) => `catch up ${p.catch_up} ${p.freshness_s}`;
    let client: GatewayClient;
    const jobs = new Map<string, { job: Job; session_id: string }>();

    beforeAll(async () => {
      shared.store = store;
      const demo = await shared.model();
      const config = modelConfig(demo);
      const clock = new TestClock(tempDir(), T0);
      let d = await shared.daemon({ config, env: clock.env() });
      client = await d.connect();
      for (const policy of policies) {
        const { catch_up, overlap, freshness_s } = policy;
        const { session_id } = await client.call<Snapshot>('session.create', {
          request_id: `s-${textOf(policy)}`,
          cwd: tempDir(),
        });
        const job = await everyMinute(client, session_id, textOf(policy), { catch_up, overlap, freshness_s });
        jobs.set(textOf(policy), { job, session_id });
      }
      expect(await d.stop()).toBe(0);

      // Down from 08:00:30 to 08:05:30: the runs of 08:01 … 08:05 were due meanwhile.
      clock.set('2026-03-02T08:05:30.000Z');
      d = await shared.daemon({ home: d.home, config, env: clock.env() });
      client = await d.connect();
      // Freshness is measured at the restart: every job's catch-up has run before the clock moves on.
      for (const policy of policies) {
        const { job } = jobs.get(textOf(policy))!;
        if (policy.fired.length > 0) await jobUntil(client, job.job_id, settledAt(policy.fired.at(-1)!));
      }
      // The next minute is on time under every policy: once it ran, nothing more can come of the downtime.
      clock.set(after(6));
    });

    it.each(policies)(
      'catch_up $catch_up (freshness $freshness_s s) after five missed minutes fires $fired.length',
      async (policy) => {
        const { job, session_id } = jobs.get(textOf(policy))!;
        await jobUntil(client, job.job_id, settledAt(minute(6)));
        const runs = await runsIn(client, session_id, textOf(policy));
        expect(runs).toHaveLength(policy.fired.length + 1);
      },
    );
  });

  describe('a run still going when the next is due (one daemon, a job per overlap)', () => {
    const shared = useSharedRig();
    let demo: DemoModelServer;
    let client: GatewayClient;
    const jobs = new Map<string, { job: Job; session_id: string }>();

    beforeAll(async () => {
      shared.store = store;
      demo = await shared.model();
      const clock = new TestClock(tempDir(), T0);
      const d = await shared.daemon({ config: modelConfig(demo), env: clock.env() });
      client = await d.connect();
      for (const overlap of ['skip', 'queue']) {
        const { session_id } = await client.call<Snapshot>('session.create', {
          request_id: `s-${overlap}`,
          cwd: tempDir(),
        });
        const job = await everyMinute(client, session_id, `overlap ${overlap}`, { overlap });
        jobs.set(overlap, { job, session_id });
      }
      // Both jobs' 08:01 runs are held at the model while 08:02 comes due.
      demo.hold();
      clock.set(after(1));
      await demo.waitForRequests(2);
      clock.set(after(2));
    });

    it.each(['skip', 'queue'])('a run still going when the next is due: overlap %s', async (overlap) => {
      const { job, session_id } = jobs.get(overlap)!;
      if (overlap === 'skip') {
        const skipped = await jobUntil(client, job.job_id, (j) => j.last_run?.kind === 'skipped');
        expect(skipped.last_run).toMatchObject({ instant: minute(2), outcome: 'skipped', state: 'settled' });
        // run-now is refused too while the run goes on.
        const busy = await client
          .call('jobs.run_now', { job_id: job.job_id, request_id: 'now-1' })
          .catch((e: unknown) => e);
        expect(busy).toBeInstanceOf(RpcCallError);
        expect((busy as RpcCallError).reason).toBe('job_busy');
      }
      demo.release();
      if (overlap === 'skip') {
        await jobUntil(
          client,
          job.job_id,
          (j) => j.failures === 0 && (j.last_run?.instant ?? '') === minute(2),
        );
        expect(await runsIn(client, session_id, `overlap ${overlap}`)).toHaveLength(1);
      } else {
        // Queued: 08:02 fires once 08:01's run ended, never beside it.
        await jobUntil(client, job.job_id, settledAt(minute(2)));
        const runs = await runsIn(client, session_id, `overlap ${overlap}`);
        expect(runs).toHaveLength(2);
      }
      expect(requestsOf(demo, `overlap ${overlap}`)).toBe(overlap === 'skip' ? 1 : 2);
    });
  });

  it('a run that ended unknown is never re-run: the job is paused with the reason', async () => {
    const demo = await rig.model();
    // max_resumes 1 keeps a crash during the turn unknown (REC-7 would resume it otherwise).
    const config = modelConfig(demo, 'recovery: {max_resumes: 1}');
    const clock = new TestClock(tempDir(), T0);
    let d = await rig.daemon({ config, env: { ...clock.env(), GATEHOUSE_TEST_FAULTS: 'turn.claimed' } });
    let client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', { request_id: 's', cwd: tempDir() });
    const job = await everyMinute(client, session_id, 'unknown run');
    clock.set(after(1));
    await died(d);
    d = await rig.daemon({ home: d.home, config, env: clock.env() });
    client = await d.connect();
    const paused = await jobUntil(client, job.job_id, (j) => j.state === 'paused');
    expect(paused.last_run).toMatchObject({ instant: minute(1), outcome: 'unknown' });
    expect(paused.paused_reason).toMatch(/ended unknown .* never re-run/);
    clock.set(after(3));
    // Paused: no firing at 08:02 or 08:03, and the unknown turn was not replayed.
    await waitForState(d.url, 'ready');
    expect((await jobOf(client, job.job_id)).last_run!.instant).toBe(minute(1));
    expect(demo.requests).toHaveLength(0);
  });

  it('a job failing max_failures times in a row is paused with the reason', async () => {
    // A model that is gone: every turn fails.
    const gone = await rig.model();
    await gone.close();
    const config = modelConfig(gone);
    const clock = new TestClock(tempDir(), T0);
    const d = await rig.daemon({ config, env: clock.env() });
    const client = await d.connect();
    const { session_id } = await client.call<Snapshot>('session.create', { request_id: 's', cwd: tempDir() });
    const job = await everyMinute(client, session_id, 'fails', { max_failures: 2 });
    clock.set(after(1));
    await jobUntil(client, job.job_id, settledAt(minute(1)));
    clock.set(after(2));
    const paused = await jobUntil(client, job.job_id, (j) => j.state === 'paused');
    expect(paused.failures).toBe(2);
    expect(paused.paused_reason).toMatch(/^its last 2 runs failed/);
    await client.call('jobs.resume', { job_id: job.job_id });
    expect((await jobOf(client, job.job_id)).failures).toBe(0);
  });
});
