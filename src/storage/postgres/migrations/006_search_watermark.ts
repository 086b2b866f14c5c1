/** 006 on PostgreSQL: the full-text index catches up to a watermark instead of beside every message. */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 6,
  name: 'search_watermark',
  sql: `
    ALTER TABLE search_index_state ADD COLUMN indexed_through BIGINT NOT NULL DEFAULT 0;
    -- Before 006 the index was not kept on PostgreSQL: mark it for a rebuild from the messages.
    UPDATE search_index_state SET stale = 1 WHERE EXISTS (SELECT 1 FROM messages);
  `,
};
