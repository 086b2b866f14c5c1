/** 010 on PostgreSQL: the step boundaries of a running turn on its admission row (as SQLite's 010). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 10,
  name: 'turn_steps',
  sql: `
    ALTER TABLE admissions ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE admissions ADD COLUMN tool_started TEXT;
    ALTER TABLE admissions ADD COLUMN prompt_json TEXT;
  `,
};
