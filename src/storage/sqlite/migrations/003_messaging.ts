/**
 * 003: chat-platform state. The delivery ledger (a reply is an obligation before it is sent), the
 * clean-shutdown marker, and the per-key restart streaks of stuck-loop detection (REC-4, REC-5).
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 3,
  name: 'messaging',
  up(db) {
    db.exec(`
      -- One row per reply a chat is owed. Written before the send, stamped delivered_at after it.
      -- turn_id is unique: a turn owes at most one reply, so recording it twice cannot send twice.
      CREATE TABLE delivery_ledger (
        delivery_id       INTEGER PRIMARY KEY AUTOINCREMENT,
        turn_id           TEXT NOT NULL UNIQUE,
        session_key       TEXT NOT NULL,
        session_id        TEXT NOT NULL,
        platform          TEXT NOT NULL,
        chat_id           TEXT NOT NULL,
        thread_id         TEXT,
        reply_to          TEXT,
        text              TEXT NOT NULL,
        silent            INTEGER NOT NULL DEFAULT 0,
        recovered         INTEGER NOT NULL DEFAULT 0,
        recorded_at       TEXT NOT NULL,
        recorded_at_epoch INTEGER NOT NULL,
        delivered_at      TEXT
      ) STRICT;
      CREATE INDEX delivery_ledger_undelivered ON delivery_ledger (delivery_id) WHERE delivered_at IS NULL;
      CREATE INDEX delivery_ledger_by_key ON delivery_ledger (session_key, recorded_at_epoch);

      -- Single named facts of the messaging gateway, e.g. the clean-shutdown marker.
      CREATE TABLE messaging_state (
        name       TEXT PRIMARY KEY,
        value      TEXT NOT NULL
      ) STRICT;

      -- How many consecutive unclean restarts found each key mid-turn (REC-5).
      CREATE TABLE restart_streaks (
        session_key TEXT PRIMARY KEY,
        count       INTEGER NOT NULL
      ) STRICT;
    `);
  },
};
