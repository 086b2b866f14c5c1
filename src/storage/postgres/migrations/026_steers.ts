/** 026 on PostgreSQL: an admission's mode (prompt or steer) and the turn a steer was applied in (as SQLite's 026). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 26,
  name: 'steers',
  sql: `ALTER TABLE admissions ADD COLUMN mode TEXT NOT NULL DEFAULT 'prompt';
ALTER TABLE admissions ADD COLUMN applied_to TEXT;`,
};
