/** 019 on PostgreSQL: budgets (as SQLite's 019). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 19,
  name: 'budgets',
  sql: `
    CREATE TABLE budget_calls (
      reservation_id  TEXT PRIMARY KEY,
      session_key     TEXT NOT NULL,
      principal       TEXT NOT NULL,
      turn_id         TEXT NOT NULL,
      day             TEXT NOT NULL,
      reserved_at     TEXT NOT NULL,
      reserved_tokens BIGINT NOT NULL,
      reserved_usd    DOUBLE PRECISION NOT NULL,
      state           TEXT NOT NULL CHECK (state IN ('reserved', 'settled', 'recovered')),
      settled_at      TEXT,
      tokens          BIGINT NOT NULL,
      usd             DOUBLE PRECISION NOT NULL
    );
    CREATE INDEX budget_calls_by_session ON budget_calls (session_key);
    CREATE INDEX budget_calls_by_day ON budget_calls (day, principal);
    CREATE INDEX budget_calls_open ON budget_calls (state) WHERE state = 'reserved';
    CREATE TABLE budget_sessions (
      session_key    TEXT PRIMARY KEY,
      paused_limit   TEXT,
      paused_measure TEXT,
      paused_at      TEXT,
      paused_day     TEXT,
      continue_once  BOOLEAN NOT NULL DEFAULT FALSE,
      exempt_turn    TEXT,
      raised_tokens  BIGINT,
      raised_usd     DOUBLE PRECISION,
      raised         BOOLEAN NOT NULL DEFAULT FALSE
    );
  `,
};
