/** 027 on PostgreSQL: where a scheduled job's result goes (as SQLite's 027). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 27,
  name: 'job_delivery',
  sql: `ALTER TABLE scheduled_jobs ADD COLUMN deliver TEXT NOT NULL DEFAULT 'session';`,
};
