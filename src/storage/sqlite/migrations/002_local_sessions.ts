/**
 * 002: gateway-owned local sessions — authority epochs, private receipts, the local-session index and
 * durable admissions (LOC-1, LOC-8, REC-1..3).
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 2,
  name: 'local_sessions',
  up(db) {
    db.exec(`
      -- REC-3: every daemon start opens the next epoch; claims and settlements carry it.
      CREATE TABLE authority_epochs (
        epoch             INTEGER PRIMARY KEY AUTOINCREMENT,
        instance_id       TEXT NOT NULL,
        started_at        TEXT NOT NULL,
        clean_shutdown_at TEXT
      ) STRICT;

      -- Private server-written records (creation receipts). Never sent to clients or models.
      CREATE TABLE private_receipts (
        key  TEXT PRIMARY KEY,
        body TEXT NOT NULL
      ) STRICT;

      -- The logical row of a local session: its stable id, owner, and execution generation.
      CREATE TABLE local_sessions (
        logical_id     TEXT PRIMARY KEY,
        profile        TEXT NOT NULL,
        owner_subject  TEXT NOT NULL,
        owner_provider TEXT NOT NULL,
        request_id     TEXT,
        source         TEXT NOT NULL,
        title          TEXT,
        hidden         INTEGER NOT NULL DEFAULT 0,
        generation     INTEGER NOT NULL DEFAULT 0,
        created_at     TEXT NOT NULL,
        paused_reason  TEXT
      ) STRICT;
      CREATE UNIQUE INDEX local_sessions_by_request
        ON local_sessions (profile, owner_provider, owner_subject, request_id) WHERE request_id IS NOT NULL;
      CREATE INDEX local_sessions_by_recency ON local_sessions (created_at DESC);

      -- LOC-8: one row per accepted input, committed before it is acknowledged. seq is the FIFO order.
      CREATE TABLE admissions (
        seq                INTEGER PRIMARY KEY AUTOINCREMENT,
        admission_id       TEXT NOT NULL UNIQUE,
        logical_id         TEXT NOT NULL REFERENCES local_sessions (logical_id),
        submission_id      TEXT NOT NULL,
        submitter_subject  TEXT NOT NULL,
        submitter_provider TEXT NOT NULL,
        profile            TEXT NOT NULL,
        digest             TEXT NOT NULL,
        text               TEXT NOT NULL,
        state              TEXT NOT NULL
          CHECK (state IN ('queued', 'running', 'unknown', 'completed', 'failed', 'cancelled', 'interrupted')),
        epoch              INTEGER,
        generation         INTEGER,
        admitted_at        TEXT NOT NULL,
        started_at         TEXT,
        settled_at         TEXT,
        detail             TEXT,
        binding            TEXT,
        UNIQUE (logical_id, submitter_provider, submitter_subject, submission_id)
      ) STRICT;
      CREATE INDEX admissions_unsettled ON admissions (logical_id, seq)
        WHERE state IN ('queued', 'running', 'unknown');
      CREATE INDEX admissions_running ON admissions (epoch) WHERE state = 'running';
    `);
  },
};
