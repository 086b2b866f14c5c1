/** 024 on PostgreSQL: a compression child's record on its row (as SQLite's 024). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 24,
  name: 'compression_steps',
  sql: `ALTER TABLE sessions ADD COLUMN lineage_json TEXT;`,
};
