/** 004 on PostgreSQL: the inbound ledger of platform messages already taken. */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 4,
  name: 'inbound_ledger',
  sql: `
    CREATE TABLE inbound_ledger (
      platform        TEXT NOT NULL,
      chat_id         TEXT NOT NULL,
      message_id      TEXT NOT NULL,
      session_key     TEXT NOT NULL,
      taken_at        TEXT NOT NULL,
      taken_at_epoch  BIGINT NOT NULL,
      PRIMARY KEY (platform, chat_id, message_id)
    );
    CREATE INDEX inbound_ledger_by_age ON inbound_ledger (taken_at_epoch);
  `,
};
