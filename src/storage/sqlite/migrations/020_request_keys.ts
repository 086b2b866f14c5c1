/**
 * 020: the request keys of the OpenAI-compatible endpoint (docs/integrations.md): an
 * Idempotency-Key, per principal, bound to the first request made with it (its digest and its
 * session), so the same key with another request — to another session too — is refused. Rows are
 * pruned a day after their first use; the admission's own submission id keeps a retry exact after.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 20,
  name: 'request_keys',
  up(db) {
    db.exec(`
      CREATE TABLE request_keys (
        profile            TEXT NOT NULL,
        principal_subject  TEXT NOT NULL,
        principal_provider TEXT NOT NULL,
        key_hash           TEXT NOT NULL,
        digest             TEXT NOT NULL,
        logical_id         TEXT NOT NULL,
        created_at         TEXT NOT NULL,
        PRIMARY KEY (profile, principal_subject, principal_provider, key_hash)
      ) STRICT;
      CREATE INDEX request_keys_by_age ON request_keys (created_at);
    `);
  },
};
