/**
 * The storage contract of scheduled jobs (issue 28, migration 021, docs/scheduling.md). A job row
 * and its runs; a run is keyed by its deterministic submission id (`job:<job id>:<instant>`), so
 * deciding, admitting and settling it are each idempotent, and a firing decided before a crash is
 * found `pending` after it and completed with the same ids.
 */

/** A job as stored; schedule, target and policy are JSON the domain reads (jobs/job.ts). */
export interface JobRow {
  job_id: string;
  profile: string;
  /** The caller's request id: a repeated jobs.add with it answers the same job. */
  request_id: string;
  /** The principal the job runs as (JSON), the one who created it. */
  owner: string;
  name: string | null;
  schedule: string;
  target: string;
  text: string;
  policy: string;
  created_at: string;
  /** The newest scheduled instant already decided (fired, skipped or missed); null: none yet. */
  last_instant: string | null;
  /** Runs that failed in a row since the last that did not. */
  failures: number;
  /** Why the job is paused (by its owner, or by the watchdog); null: active. */
  paused_reason: string | null;
  /** Where a run's result goes: `session`, or `home:<platform>` (also that platform's home channel). */
  deliver: string;
}

export const RUN_STATES = ['pending', 'admitted', 'settled'] as const;
export type RunState = (typeof RUN_STATES)[number];

/** One decided firing: fired (a turn), or skipped (its previous run was still going). */
export interface RunRow {
  job_id: string;
  submission_id: string;
  instant: string;
  /** `scheduled`, `manual` (jobs.run_now) or `skipped`. */
  kind: 'scheduled' | 'manual' | 'skipped';
  /** pending: decided, not yet admitted · admitted: its admission exists · settled: it ended. */
  state: RunState;
  session_id: string | null;
  admission_id: string | null;
  /** The admission's outcome once settled (completed, failed, cancelled, interrupted, unknown), or `skipped`. */
  outcome: string | null;
  detail: string | null;
  recorded_at: string;
}

export type AddJobResult = { kind: 'added' | 'existing'; job: JobRow };

/** What a settled run changes on its job, in the same commit. */
export interface SettleEffect {
  failures: number;
  /** Set: the job is paused with this reason (the watchdog); null: left as it is. */
  pause: string | null;
}

export interface JobStore {
  /** Adds the job, or answers the job an earlier call with the same (profile, request_id) added. */
  addJob(job: JobRow): Promise<AddJobResult>;
  getJob(jobId: string): Promise<JobRow | null>;
  listJobs(profile: string): Promise<JobRow[]>;
  /** Pauses (a reason) or resumes (null, and the failure count starts again); false: no such job. */
  setPaused(jobId: string, reason: string | null): Promise<boolean>;
  /** Deletes the job and its runs; false: no such job. */
  removeJob(jobId: string): Promise<boolean>;
  /**
   * Records a decision in one commit: the runs (a scheduled or manual run `pending`, a skipped one
   * `settled`) and, when `advance` is given, last_instant moved from `advance.from` to `advance.to`.
   * False, with nothing written, when last_instant is no longer `advance.from` (decided elsewhere)
   * or the job is gone. A run already recorded is left as it is.
   */
  recordDecision(
    jobId: string,
    runs: readonly RunRow[],
    advance: { from: string | null; to: string } | null,
  ): Promise<boolean>;
  /** A pending run's admission exists now. */
  markAdmitted(jobId: string, submissionId: string, sessionId: string, admissionId: string): Promise<void>;
  /** An admitted run ended: its outcome, and its job's failure count (and pause) in the same commit. */
  settleRun(
    jobId: string,
    submissionId: string,
    outcome: string,
    detail: string | null,
    effect: SettleEffect,
  ): Promise<void>;
  /** Runs not yet settled (pending or admitted), of every job of the profile. */
  openRuns(profile: string): Promise<RunRow[]>;
  /** The job's newest runs, newest first. */
  recentRuns(jobId: string, limit: number): Promise<RunRow[]>;
  /** Deletes the job's settled runs beyond its newest `keep`. */
  pruneRuns(jobId: string, keep: number): Promise<void>;
}
