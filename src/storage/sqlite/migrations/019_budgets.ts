/**
 * 019: budgets (docs/cost.md, "Budgets"). `budget_calls` holds one row per model call, reserved at
 * its worst case before the call and settled with its real usage after it (`tokens`/`usd` are what
 * the call counts for now); `budget_sessions` a session's pause, continue-once and raised limit.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 19,
  name: 'budgets',
  up(db) {
    db.exec(`
      CREATE TABLE budget_calls (
        reservation_id  TEXT PRIMARY KEY,
        session_key     TEXT NOT NULL,
        principal       TEXT NOT NULL,
        turn_id         TEXT NOT NULL,
        day             TEXT NOT NULL,
        reserved_at     TEXT NOT NULL,
        reserved_tokens INTEGER NOT NULL,
        reserved_usd    REAL NOT NULL,
        state           TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'recovered')),
        settled_at      TEXT,
        tokens          INTEGER NOT NULL,
        usd             REAL NOT NULL
      ) STRICT;
      CREATE INDEX budget_calls_by_session ON budget_calls (session_key);
      CREATE INDEX budget_calls_by_day ON budget_calls (day, principal);
      CREATE INDEX budget_calls_open ON budget_calls (state) WHERE state = 'reserved';
      CREATE TABLE budget_sessions (
        session_key    TEXT PRIMARY KEY,
        paused_limit   TEXT,
        paused_measure TEXT,
        paused_at      TEXT,
        paused_day     TEXT,
        continue_once  INTEGER NOT NULL DEFAULT 0,
        exempt_turn    TEXT,
        raised_tokens  INTEGER,
        raised_usd     REAL,
        raised         INTEGER NOT NULL DEFAULT 0
      ) STRICT;
    `);
  },
};
