/** 025 on PostgreSQL: the refused call's worst case kept with a budget pause (as SQLite's 025). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 25,
  name: 'budget_pause_worst',
  sql: `ALTER TABLE budget_sessions ADD COLUMN paused_worst_tokens BIGINT;
ALTER TABLE budget_sessions ADD COLUMN paused_worst_usd DOUBLE PRECISION;`,
};
