/** Scheduled jobs on SQLite (migration 021), on the session store's connection. */
import type Database from 'better-sqlite3';
import type { AddJobResult, JobRow, JobStore, RunRow, SettleEffect } from '../../domain/ports/job-store.js';
import { JOB_COLUMNS, jobValues, RUN_COLUMNS, runValues } from '../rows/jobs.js';
import { CommitGroup } from './commit-group.js';
import { statement } from './statements.js';

/** Every write goes through the connection's commit group: it resolves once durable, in one transaction. */
export class SqliteJobStore implements JobStore {
  private readonly group: CommitGroup;

  constructor(private readonly db: Database.Database) {
    this.group = CommitGroup.of(db);
  }

  private job(jobId: string): JobRow | null {
    return (
      (statement(this.db, `SELECT ${JOB_COLUMNS} FROM scheduled_jobs WHERE job_id = ?`).get(jobId) as
        JobRow | undefined) ?? null
    );
  }

  addJob(job: JobRow): Promise<AddJobResult> {
    return this.group.run((): AddJobResult => {
      const existing = statement(
        this.db,
        `SELECT ${JOB_COLUMNS} FROM scheduled_jobs WHERE profile = ? AND request_id = ?`,
      ).get(job.profile, job.request_id) as JobRow | undefined;
      if (existing) return { kind: 'existing', job: existing };
      statement(
        this.db,
        `INSERT INTO scheduled_jobs (${JOB_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...jobValues(job));
      return { kind: 'added', job };
    });
  }

  getJob(jobId: string): Promise<JobRow | null> {
    return Promise.resolve(this.job(jobId));
  }

  listJobs(profile: string): Promise<JobRow[]> {
    return Promise.resolve(
      statement(
        this.db,
        `SELECT ${JOB_COLUMNS} FROM scheduled_jobs WHERE profile = ? ORDER BY created_at, job_id`,
      ).all(profile) as JobRow[],
    );
  }

  setPaused(jobId: string, reason: string | null): Promise<boolean> {
    return this.group.run(
      () =>
        statement(
          this.db,
          `UPDATE scheduled_jobs SET paused_reason = ?, failures = CASE WHEN ? IS NULL THEN 0 ELSE failures END
        WHERE job_id = ?`,
        ).run(reason, reason, jobId).changes === 1,
    );
  }

  removeJob(jobId: string): Promise<boolean> {
    return this.group.run(() => {
      statement(this.db, 'DELETE FROM scheduled_runs WHERE job_id = ?').run(jobId);
      return statement(this.db, 'DELETE FROM scheduled_jobs WHERE job_id = ?').run(jobId).changes === 1;
    });
  }

  recordDecision(
    jobId: string,
    runs: readonly RunRow[],
    advance: { from: string | null; to: string } | null,
  ): Promise<boolean> {
    return this.group.run(() => {
      if (advance) {
        const moved = statement(
          this.db,
          'UPDATE scheduled_jobs SET last_instant = ? WHERE job_id = ? AND last_instant IS ?',
        ).run(advance.to, jobId, advance.from).changes;
        if (moved !== 1) return false;
      } else if (this.job(jobId) === null) return false;
      const insert = statement(
        this.db,
        `INSERT INTO scheduled_runs (${RUN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (job_id, submission_id) DO NOTHING`,
      );
      for (const r of runs) insert.run(...runValues(r));
      return true;
    });
  }

  markAdmitted(jobId: string, submissionId: string, sessionId: string, admissionId: string): Promise<void> {
    return this.group.run(() => {
      statement(
        this.db,
        `UPDATE scheduled_runs SET state = 'admitted', session_id = ?, admission_id = ?
        WHERE job_id = ? AND submission_id = ? AND state = 'pending'`,
      ).run(sessionId, admissionId, jobId, submissionId);
    });
  }

  settleRun(
    jobId: string,
    submissionId: string,
    outcome: string,
    detail: string | null,
    effect: SettleEffect,
  ): Promise<void> {
    return this.group.run(() => {
      const changed = statement(
        this.db,
        `UPDATE scheduled_runs SET state = 'settled', outcome = ?, detail = ?
          WHERE job_id = ? AND submission_id = ? AND state <> 'settled'`,
      ).run(outcome, detail, jobId, submissionId).changes;
      if (changed !== 1) return;
      statement(
        this.db,
        'UPDATE scheduled_jobs SET failures = ?, paused_reason = COALESCE(?, paused_reason) WHERE job_id = ?',
      ).run(effect.failures, effect.pause, jobId);
    });
  }

  openRuns(profile: string): Promise<RunRow[]> {
    return Promise.resolve(
      statement(
        this.db,
        `SELECT ${RUN_COLUMNS.split(', ')
          .map((c) => `r.${c}`)
          .join(', ')} FROM scheduled_runs r JOIN scheduled_jobs j ON j.job_id = r.job_id
          WHERE r.state <> 'settled' AND j.profile = ? ORDER BY r.instant`,
      ).all(profile) as RunRow[],
    );
  }

  recentRuns(jobId: string, limit: number): Promise<RunRow[]> {
    return Promise.resolve(
      statement(
        this.db,
        `SELECT ${RUN_COLUMNS} FROM scheduled_runs WHERE job_id = ? ORDER BY recorded_at DESC, instant DESC LIMIT ?`,
      ).all(jobId, limit) as RunRow[],
    );
  }

  pruneRuns(jobId: string, keep: number): Promise<void> {
    return this.group.run(() => {
      statement(
        this.db,
        `DELETE FROM scheduled_runs WHERE job_id = ? AND state = 'settled' AND submission_id NOT IN (
         SELECT submission_id FROM scheduled_runs WHERE job_id = ? ORDER BY recorded_at DESC, instant DESC LIMIT ?)`,
      ).run(jobId, jobId, keep);
    });
  }
}
