/**
 * 007: context compression (SPEC LIN-1). A compression child links to the transcript it was made
 * from (`parent_session_id`), which recovery checks (LIN-3) and `sessions --show` follows to print
 * the whole history. A failed summary backs off with a growing cooldown that survives a restart.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 7,
  name: 'compression',
  up(db) {
    db.exec(`
      ALTER TABLE sessions ADD COLUMN parent_session_id TEXT REFERENCES sessions (session_id);
      CREATE INDEX sessions_by_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;

      -- One row per conversation whose last compression failed: a local session's logical id, or a
      -- chat platform's session key. Deleted by the next compression that succeeds.
      CREATE TABLE compression_backoff (
        subject     TEXT PRIMARY KEY,
        failures    INTEGER NOT NULL,
        retry_after TEXT NOT NULL,
        last_error  TEXT NOT NULL
      ) STRICT;
    `);
  },
};
