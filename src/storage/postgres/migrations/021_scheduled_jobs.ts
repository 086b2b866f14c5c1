/** 021 on PostgreSQL: scheduled jobs and their runs (as SQLite's 021). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 21,
  name: 'scheduled_jobs',
  sql: `
    CREATE TABLE scheduled_jobs (
      job_id        TEXT PRIMARY KEY,
      profile       TEXT NOT NULL,
      request_id    TEXT NOT NULL,
      owner         TEXT NOT NULL,
      name          TEXT,
      schedule      TEXT NOT NULL,
      target        TEXT NOT NULL,
      text          TEXT NOT NULL,
      policy        TEXT NOT NULL,
      created_at    TEXT NOT NULL,
      last_instant  TEXT,
      failures      INTEGER NOT NULL DEFAULT 0,
      paused_reason TEXT,
      UNIQUE (profile, request_id)
    );
    CREATE TABLE scheduled_runs (
      job_id        TEXT NOT NULL,
      submission_id TEXT NOT NULL,
      instant       TEXT NOT NULL,
      kind          TEXT NOT NULL,
      state         TEXT NOT NULL,
      session_id    TEXT,
      admission_id  TEXT,
      outcome       TEXT,
      detail        TEXT,
      recorded_at   TEXT NOT NULL,
      PRIMARY KEY (job_id, submission_id)
    );
    CREATE INDEX scheduled_runs_open ON scheduled_runs (state) WHERE state <> 'settled';
    CREATE INDEX scheduled_runs_by_job ON scheduled_runs (job_id, recorded_at);
  `,
};
