/** 008 on PostgreSQL: the lineage kind of a child transcript, and idempotent rewinds by request. */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 8,
  name: 'lineage',
  sql: `
    ALTER TABLE sessions ADD COLUMN IF NOT EXISTS parent_session_id TEXT REFERENCES sessions (session_id);
    ALTER TABLE sessions ADD COLUMN IF NOT EXISTS lineage_kind TEXT;
    CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (parent_session_id)
      WHERE parent_session_id IS NOT NULL;
    ALTER TABLE rewinds ADD COLUMN request_key TEXT;
    CREATE UNIQUE INDEX rewinds_by_request ON rewinds (request_key) WHERE request_key IS NOT NULL;
  `,
};
