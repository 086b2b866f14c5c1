/** 023 on PostgreSQL: archiving and forks of local sessions (as SQLite's 023). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 23,
  name: 'session_manage',
  sql: `
    ALTER TABLE local_sessions ADD COLUMN archived_at TEXT;
    ALTER TABLE local_sessions ADD COLUMN forked_from TEXT;
    ALTER TABLE local_sessions ADD COLUMN forked_message_id BIGINT;
    CREATE INDEX local_sessions_by_fork ON local_sessions (forked_from) WHERE forked_from IS NOT NULL;
  `,
};
