/** The columns of scheduled jobs and runs (migrations 021, 027) and their values in column order, for both backends. */
import type { JobRow, RunRow } from '../../domain/ports/job-store.js';

export const JOB_COLUMNS =
  'job_id, profile, request_id, owner, name, schedule, target, text, policy, created_at, last_instant, failures, paused_reason, deliver';
export const RUN_COLUMNS =
  'job_id, submission_id, instant, kind, state, session_id, admission_id, outcome, detail, recorded_at';

export function jobValues(job: JobRow): unknown[] {
  return [
    job.job_id,
    job.profile,
    job.request_id,
    job.owner,
    job.name,
    job.schedule,
    job.target,
    job.text,
    job.policy,
    job.created_at,
    job.last_instant,
    job.failures,
    job.paused_reason,
    job.deliver,
  ];
}

export function runValues(r: RunRow): unknown[] {
  return [
    r.job_id,
    r.submission_id,
    r.instant,
    r.kind,
    r.state,
    r.session_id,
    r.admission_id,
    r.outcome,
    r.detail,
    r.recorded_at,
  ];
}
