/** Scheduled jobs on PostgreSQL (migration 021), on the session store's connection. */
import type { AddJobResult, JobRow, JobStore, RunRow, SettleEffect } from '../../domain/ports/job-store.js';
import { JOB_COLUMNS, jobValues, RUN_COLUMNS, runValues } from '../rows/jobs.js';
import type { PgDatabase } from './database.js';

export class PostgresJobStore implements JobStore {
  constructor(private readonly db: PgDatabase) {}

  addJob(job: JobRow): Promise<AddJobResult> {
    return this.db.transaction(async (sql) => {
      const inserted = await sql.run(
        `INSERT INTO scheduled_jobs (${JOB_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
         ON CONFLICT (profile, request_id) DO NOTHING`,
        jobValues(job),
      );
      if (inserted === 1) return { kind: 'added', job };
      const existing = await sql.row<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM scheduled_jobs WHERE profile = $1 AND request_id = $2`,
        [job.profile, job.request_id],
      );
      return { kind: 'existing', job: existing! };
    });
  }

  getJob(jobId: string): Promise<JobRow | null> {
    return this.db.exclusive((sql) =>
      sql.row<JobRow>(`SELECT ${JOB_COLUMNS} FROM scheduled_jobs WHERE job_id = $1`, [jobId]),
    );
  }

  listJobs(profile: string): Promise<JobRow[]> {
    return this.db.exclusive((sql) =>
      sql.rows<JobRow>(
        `SELECT ${JOB_COLUMNS} FROM scheduled_jobs WHERE profile = $1 ORDER BY created_at, job_id`,
        [profile],
      ),
    );
  }

  async setPaused(jobId: string, reason: string | null): Promise<boolean> {
    const changed = await this.db.exclusive((sql) =>
      sql.run(
        `UPDATE scheduled_jobs SET paused_reason = $1::text,
                failures = CASE WHEN $1::text IS NULL THEN 0 ELSE failures END
          WHERE job_id = $2`,
        [reason, jobId],
      ),
    );
    return changed === 1;
  }

  removeJob(jobId: string): Promise<boolean> {
    return this.db.transaction(async (sql) => {
      await sql.run('DELETE FROM scheduled_runs WHERE job_id = $1', [jobId]);
      return (await sql.run('DELETE FROM scheduled_jobs WHERE job_id = $1', [jobId])) === 1;
    });
  }

  recordDecision(
    jobId: string,
    runs: readonly RunRow[],
    advance: { from: string | null; to: string } | null,
  ): Promise<boolean> {
    return this.db.transaction(async (sql) => {
      if (advance) {
        const moved = await sql.run(
          'UPDATE scheduled_jobs SET last_instant = $1 WHERE job_id = $2 AND last_instant IS NOT DISTINCT FROM $3',
          [advance.to, jobId, advance.from],
        );
        if (moved !== 1) return false;
      } else {
        // Locks the job row: a removal waits for this commit, or this one finds the job gone.
        const job = await sql.row('SELECT 1 FROM scheduled_jobs WHERE job_id = $1 FOR UPDATE', [jobId]);
        if (job === null) return false;
      }
      for (const r of runs)
        await sql.run(
          `INSERT INTO scheduled_runs (${RUN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (job_id, submission_id) DO NOTHING`,
          runValues(r),
        );
      return true;
    });
  }

  async markAdmitted(
    jobId: string,
    submissionId: string,
    sessionId: string,
    admissionId: string,
  ): Promise<void> {
    await this.db.exclusive((sql) =>
      sql.run(
        `UPDATE scheduled_runs SET state = 'admitted', session_id = $1, admission_id = $2
          WHERE job_id = $3 AND submission_id = $4 AND state = 'pending'`,
        [sessionId, admissionId, jobId, submissionId],
      ),
    );
  }

  settleRun(
    jobId: string,
    submissionId: string,
    outcome: string,
    detail: string | null,
    effect: SettleEffect,
  ): Promise<void> {
    return this.db.transaction(async (sql) => {
      const changed = await sql.run(
        `UPDATE scheduled_runs SET state = 'settled', outcome = $1, detail = $2
          WHERE job_id = $3 AND submission_id = $4 AND state <> 'settled'`,
        [outcome, detail, jobId, submissionId],
      );
      if (changed !== 1) return;
      await sql.run(
        'UPDATE scheduled_jobs SET failures = $1, paused_reason = COALESCE($2, paused_reason) WHERE job_id = $3',
        [effect.failures, effect.pause, jobId],
      );
    });
  }

  openRuns(profile: string): Promise<RunRow[]> {
    const columns = RUN_COLUMNS.split(', ')
      .map((c) => `r.${c}`)
      .join(', ');
    return this.db.exclusive((sql) =>
      sql.rows<RunRow>(
        `SELECT ${columns} FROM scheduled_runs r JOIN scheduled_jobs j ON j.job_id = r.job_id
          WHERE r.state <> 'settled' AND j.profile = $1 ORDER BY r.instant`,
        [profile],
      ),
    );
  }

  recentRuns(jobId: string, limit: number): Promise<RunRow[]> {
    return this.db.exclusive((sql) =>
      sql.rows<RunRow>(
        `SELECT ${RUN_COLUMNS} FROM scheduled_runs WHERE job_id = $1 ORDER BY recorded_at DESC, instant DESC LIMIT $2`,
        [jobId, limit],
      ),
    );
  }

  async pruneRuns(jobId: string, keep: number): Promise<void> {
    await this.db.exclusive((sql) =>
      sql.run(
        `DELETE FROM scheduled_runs WHERE job_id = $1 AND state = 'settled' AND submission_id NOT IN (
           SELECT submission_id FROM scheduled_runs WHERE job_id = $1 ORDER BY recorded_at DESC, instant DESC LIMIT $2)`,
        [jobId, keep],
      ),
    );
  }
}
