/**
 * 021: scheduled jobs (issue 28, docs/scheduling.md). A job row holds its schedule, target and text,
 * and `last_instant`: the newest scheduled instant already decided (fired, skipped or missed), the
 * compare-and-set point that keeps two deciders from deciding one instant twice. A run row is one
 * decided firing, keyed by its deterministic submission id; it is written (state `pending`) before
 * its admission, so a firing decided before a crash is completed after it, never lost.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 21,
  name: 'scheduled_jobs',
  up(db) {
    db.exec(`
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
      ) STRICT;
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
      ) STRICT;
      CREATE INDEX scheduled_runs_open ON scheduled_runs (state) WHERE state <> 'settled';
      CREATE INDEX scheduled_runs_by_job ON scheduled_runs (job_id, recorded_at);
    `);
  },
};
