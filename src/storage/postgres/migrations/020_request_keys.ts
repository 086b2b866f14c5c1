/** 020 on PostgreSQL: the request keys of the OpenAI-compatible endpoint (as SQLite's 020). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 20,
  name: 'request_keys',
  sql: `
    CREATE TABLE request_keys (
      profile            TEXT NOT NULL,
      principal_subject  TEXT NOT NULL,
      principal_provider TEXT NOT NULL,
      key_hash           TEXT NOT NULL,
      digest             TEXT NOT NULL,
      logical_id         TEXT NOT NULL,
      created_at         TEXT NOT NULL,
      PRIMARY KEY (profile, principal_subject, principal_provider, key_hash)
    );
    CREATE INDEX request_keys_by_age ON request_keys (created_at);
  `,
};
