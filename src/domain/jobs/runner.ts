/**
 * The job runner (issue 28, docs/scheduling.md): at each tick it carries out what decide.ts decides.
 *
 *   decided ──recordDecision──▶ run pending ──admission (deterministic ids)──▶ admitted ──▶ settled
 *
 * A firing is written `pending` before its admission, in the commit that moves the job's
 * last_instant; the admission is made through the ordinary admission path with the submission id
 * `job:<job id>:<instant>` (and, for a new session per run, the creation request id the same), so a
 * crash anywhere repeats only calls that answer what they answered before: a pending run found at a
 * tick is admitted again (a duplicate when it was already), never decided again. An admitted run is
 * settled from its admission's outcome: `unknown` pauses the job (it is never re-run on its own), a
 * failure counts towards the watchdog's pause.
 *
 * In a cluster one instance runs the jobs: the holder of the lease `jobs:<profile>` (mayRun).
 */
import { Ticker } from '../concurrency/ticker.js';
import { GatewayError } from '../errors.js';
import { TypedEmitter } from '../events/typed-emitter.js';
import type { JobStore, RunRow } from '../ports/job-store.js';
import { decide } from './decide.js';
import { homePlatformOf, readJob, runSubmissionId, type Job } from './job.js';

export interface JobClock {
  now(): Date;
}

export interface JobEvents extends Record<string, unknown> {
  'job:fired': { job_id: string; submission_id: string; session_id: string; admission_id: string };
  'job:settled': { job_id: string; submission_id: string; outcome: string };
  'job:paused': { job_id: string; reason: string };
  'job:missed': { job_id: string; missed: number; stale: boolean };
}

/** What the runner needs of the local sessions: admissions and their outcomes. */
export interface JobFiring {
  /** Admits the run's text (creating its session first when the target says so); idempotent by ids. */
  fire(job: Job, run: RunRow): Promise<{ session_id: string; admission_id: string }>;
  /** The admission's state and detail, or null when it is gone. */
  admission(admissionId: string): Promise<{ state: string; detail: string | null } | null>;
  /**
   * A completed run of a `home:<platform>` job: puts its final answer on the delivery ledger for
   * the platform's home channel (idempotent per run) and hands it to the sender. Called before the
   * run is settled, so a crash in between repeats it (a duplicate record: nothing sent twice).
   */
  deliverHome(job: Job, run: RunRow, platform: string): Promise<void>;
}

export interface JobRunnerOptions {
  store: JobStore;
  profile: string;
  clock: JobClock;
  firing: JobFiring;
  /** Whether this instance runs the jobs now (a cluster's lease); absent: always. */
  mayRun?: () => Promise<boolean>;
  tickMs: number;
  fault: (point: string) => void;
  onError: (error: unknown, context: string) => void;
}

/** Settled runs kept per job for `jobs.list` and `gatehouse status`. */
export const RUNS_KEPT = 20;

const SETTLED = ['completed', 'failed', 'cancelled', 'interrupted'];

export class JobRunner {
  readonly events = new TypedEmitter<JobEvents>();
  /** Asked while a pass runs, a tick only waits for it: the next interval picks up the rest. */
  private readonly ticker: Ticker;
  /** Since when this instance has run the jobs (catch_up none fires only what fell due since). */
  private watchingSince: Date | null = null;

  constructor(private readonly options: JobRunnerOptions) {
    this.ticker = new Ticker({
      intervalMs: options.tickMs,
      whileRunning: 'join',
      pass: () => this.pass(),
      onError: (error) => options.onError(error, 'scheduled jobs pass'),
    });
  }

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }

  /** One pass; a pass still running makes this one a no-op. Resolves when the pass ends. */
  tick(): Promise<void> {
    return this.ticker.tick();
  }

  private async pass(): Promise<void> {
    const { store, profile, clock } = this.options;
    if (this.options.mayRun && !(await this.options.mayRun())) {
      this.watchingSince = null;
      return;
    }
    this.watchingSince ??= clock.now();
    const open = await store.openRuns(profile);
    const busy = new Set<string>();
    for (const run of open) {
      if (this.ticker.stopped) return;
      const settled = await this.carryOn(run);
      if (!settled) busy.add(run.job_id);
    }
    for (const row of await store.listJobs(profile)) {
      if (this.ticker.stopped) return;
      if (row.paused_reason !== null) continue;
      await this.decideJob(readJob(row), busy.has(row.job_id));
    }
  }

  /** Moves an open run on: admits a pending one, settles an admitted one that ended. True: settled. */
  private async carryOn(run: RunRow): Promise<boolean> {
    const { store } = this.options;
    if (run.state === 'pending') {
      const row = await store.getJob(run.job_id);
      if (row === null) return true;
      await this.admit(readJob(row), run);
      return false;
    }
    const admission = await this.options.firing.admission(run.admission_id!);
    const outcome = admission?.state ?? 'failed';
    if (admission !== null && !SETTLED.includes(outcome) && outcome !== 'unknown') return false;
    await this.settle(run, outcome, admission === null ? 'its admission is gone' : admission.detail);
    return true;
  }

  private async settle(run: RunRow, outcome: string, detail: string | null): Promise<void> {
    const { store } = this.options;
    const row = await store.getJob(run.job_id);
    if (row === null) return;
    const job = readJob(row);
    let failures = row.failures;
    let pause: string | null = null;
    if (outcome === 'completed') failures = 0;
    if (outcome === 'failed') failures += 1;
    if (outcome === 'unknown') {
      pause =
        `its run of ${run.instant} ended unknown (the daemon died during its turn): it is never re-run ` +
        'on its own; resolve that admission, then resume the job';
    } else if (outcome === 'failed' && failures >= job.policy.max_failures) {
      pause = `its last ${failures} runs failed (the last: ${detail ?? 'no detail'})`;
    }
    const home = homePlatformOf(row.deliver);
    if (outcome === 'completed' && home !== null) await this.options.firing.deliverHome(job, run, home);
    await store.settleRun(run.job_id, run.submission_id, outcome, detail, { failures, pause });
    await store.pruneRuns(run.job_id, RUNS_KEPT);
    this.events.emit('job:settled', { job_id: run.job_id, submission_id: run.submission_id, outcome });
    if (pause !== null && row.paused_reason === null)
      this.events.emit('job:paused', { job_id: run.job_id, reason: pause });
  }

  private async decideJob(job: Job, busy: boolean): Promise<void> {
    const { store, clock } = this.options;
    const now = clock.now();
    const last = job.row.last_instant;
    const decision = decide({
      schedule: job.schedule,
      policy: job.policy,
      last_instant: last === null ? null : new Date(last),
      created_at: new Date(job.row.created_at),
      watching_since: this.watchingSince ?? now,
      now,
      busy,
    });
    if (decision.advance_to === null) return;
    const recordedAt = now.toISOString();
    const runs: RunRow[] = [
      ...decision.fire.map((t) => this.run(job, t, 'scheduled', 'pending', recordedAt)),
      ...decision.skipped.map((t) => ({
        ...this.run(job, t, 'skipped', 'settled', recordedAt),
        outcome: 'skipped',
        detail: 'the previous run was still going (overlap: skip)',
      })),
    ];
    const recorded = await store.recordDecision(job.row.job_id, runs, {
      from: last,
      to: decision.advance_to.toISOString(),
    });
    if (!recorded) return;
    if (decision.missed > 0 || decision.stale)
      this.events.emit('job:missed', {
        job_id: job.row.job_id,
        missed: decision.missed,
        stale: decision.stale,
      });
    for (const run of runs) if (run.state === 'pending') await this.admit(job, run);
  }

  private run(job: Job, instant: Date, kind: RunRow['kind'], state: RunRow['state'], at: string): RunRow {
    return {
      job_id: job.row.job_id,
      submission_id: runSubmissionId(job.row.job_id, instant),
      instant: instant.toISOString(),
      kind,
      state,
      session_id: null,
      admission_id: null,
      outcome: null,
      detail: null,
      recorded_at: at,
    };
  }

  /**
   * Admits a pending run. A refusal that may pass (draining, storage) leaves it pending for the next
   * tick; any other (the session is gone, or paused) settles it as failed, with the reason.
   */
  async admit(job: Job, run: RunRow): Promise<{ session_id: string; admission_id: string } | null> {
    this.options.fault('job.decided');
    let fired: { session_id: string; admission_id: string };
    try {
      fired = await this.options.firing.fire(job, run);
    } catch (error) {
      if (
        error instanceof GatewayError &&
        !['runtime_draining', 'storage_unavailable'].includes(error.reason)
      ) {
        await this.settle(run, 'failed', `not admitted: ${error.message}`);
        return null;
      }
      throw error;
    }
    await this.options.store.markAdmitted(
      run.job_id,
      run.submission_id,
      fired.session_id,
      fired.admission_id,
    );
    this.events.emit('job:fired', { job_id: run.job_id, submission_id: run.submission_id, ...fired });
    return fired;
  }
}
