/** 005 on PostgreSQL: the inbound backlog, and how each taken message was handled. */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 5,
  name: 'inbound_backlog',
  sql: `
    CREATE TABLE inbound_backlog (
      item_id      TEXT PRIMARY KEY,
      session_key  TEXT NOT NULL,
      position     INTEGER NOT NULL,
      kind         TEXT NOT NULL CHECK (kind IN ('message', 'queued', 'internal')),
      event        TEXT NOT NULL
    );
    CREATE INDEX inbound_backlog_by_key ON inbound_backlog (session_key, position);

    ALTER TABLE inbound_ledger ADD COLUMN outcome TEXT NOT NULL DEFAULT 'taken';
  `,
};
