/** 014 on PostgreSQL: the step boundaries of a chat-platform turn on its marker (as SQLite's 014). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 14,
  name: 'platform_turn_steps',
  sql: `
    ALTER TABLE turn_markers ADD COLUMN turn_id TEXT;
    ALTER TABLE turn_markers ADD COLUMN tool_started TEXT;
    ALTER TABLE turn_markers ADD COLUMN prompt_json TEXT;
  `,
};
