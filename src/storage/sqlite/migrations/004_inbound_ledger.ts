/**
 * 004: the inbound ledger. Chat platforms redeliver a message the gateway took when they never
 * heard that it was taken (Telegram hands out an update again until a later getUpdates confirms
 * its offset, and a SIGKILL can fall between the two). A row here says "this platform message was
 * already taken": by a turn (written with the turn's in-flight marker, in one transaction) or by a
 * chat command acting on it. A redelivery that finds its row is dropped.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 4,
  name: 'inbound_ledger',
  up(db) {
    db.exec(`
      -- A platform message id is unique within its chat, so (platform, chat_id, message_id) names
      -- one inbound message across redeliveries.
      CREATE TABLE inbound_ledger (
        platform        TEXT NOT NULL,
        chat_id         TEXT NOT NULL,
        message_id      TEXT NOT NULL,
        session_key     TEXT NOT NULL,
        taken_at        TEXT NOT NULL,
        taken_at_epoch  INTEGER NOT NULL,
        PRIMARY KEY (platform, chat_id, message_id)
      ) STRICT, WITHOUT ROWID;
      -- Rows are pruned by age at start-up, long after any platform would still redeliver.
      CREATE INDEX inbound_ledger_by_age ON inbound_ledger (taken_at_epoch);
    `);
  },
};
