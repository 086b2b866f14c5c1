/**
 * 005: the inbound backlog, and how each taken message was handled.
 *
 * A message that waits in a chat's queue (a follow-up, a `/queue` item) lives in memory until its
 * turn starts. Its platform may have been told it was received long before that (Telegram confirms
 * an update with the next poll), so a restart in between, graceful or not, would lose it. A row
 * here is written when the message starts waiting and deleted in the transaction that starts its
 * turn; every row left at start-up is put back on its queue, in order.
 *
 * inbound_ledger.outcome says what became of each taken message: `waiting` (on the backlog),
 * `turn`, `command`, `answer` (to a clarify question), `collapsed` (a newer follow-up replaced it,
 * QUE-1), `dropped` (/stop, /new or /reset cleared it). Rows written before 005 say `taken`.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 5,
  name: 'inbound_backlog',
  up(db) {
    db.exec(`
      -- One row per event waiting in a session key's queue; position orders a key's rows.
      -- event is the MessageEvent as JSON (source, text, internal, received_at).
      CREATE TABLE inbound_backlog (
        item_id      TEXT PRIMARY KEY,
        session_key  TEXT NOT NULL,
        position     INTEGER NOT NULL,
        kind         TEXT NOT NULL CHECK (kind IN ('message', 'queued', 'internal')),
        event        TEXT NOT NULL
      ) STRICT, WITHOUT ROWID;
      CREATE INDEX inbound_backlog_by_key ON inbound_backlog (session_key, position);

      ALTER TABLE inbound_ledger ADD COLUMN outcome TEXT NOT NULL DEFAULT 'taken';
    `);
  },
};
