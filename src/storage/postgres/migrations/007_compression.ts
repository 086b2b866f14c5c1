/** 007 on PostgreSQL: compression children link to their parent; failed summaries back off. */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 7,
  name: 'compression',
  sql: `
    ALTER TABLE sessions ADD COLUMN parent_session_id TEXT REFERENCES sessions (session_id);
    CREATE INDEX sessions_by_parent ON sessions (parent_session_id) WHERE parent_session_id IS NOT NULL;

    CREATE TABLE compression_backoff (
      subject     TEXT PRIMARY KEY,
      failures    INTEGER NOT NULL,
      retry_after TEXT NOT NULL,
      last_error  TEXT NOT NULL
    );
  `,
};
