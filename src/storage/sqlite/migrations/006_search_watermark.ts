/**
 * 006: the full-text index catches up instead of being written beside every message.
 *
 * `indexed_through` is the highest message id the index holds. Messages above it are indexed in
 * batches after they are written, and always before a search runs (ops/search-index.ts). Until 005
 * every message was indexed in its own transaction, so an index that is not stale holds them all.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 6,
  name: 'search_watermark',
  up(db) {
    db.exec(`
      ALTER TABLE search_index_state ADD COLUMN indexed_through INTEGER NOT NULL DEFAULT 0;
      UPDATE search_index_state SET indexed_through = coalesce((SELECT max(id) FROM messages), 0);
    `);
  },
};
