/**
 * 001: physical sessions, the routing map, canonical messages, rewind audit, in-flight turn markers
 * and the derived full-text index.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 1,
  name: 'sessions',
  up(db) {
    db.exec(`
      -- One row per physical session (one transcript). Never deleted; closing keeps the messages.
      CREATE TABLE sessions (
        session_id     TEXT PRIMARY KEY,
        session_key    TEXT NOT NULL,
        origin_json    TEXT,
        created_at     TEXT NOT NULL,
        closed_at      TEXT,
        closed_reason  TEXT
      ) STRICT;
      CREATE INDEX sessions_by_key ON sessions (session_key);

      -- The routing map (STO-3): session_key -> the entry currently on it (ENT-1). Living in the
      -- database makes every change to it part of the same transaction as the rows it points at.
      CREATE TABLE routes (
        session_key           TEXT PRIMARY KEY,
        session_id            TEXT NOT NULL REFERENCES sessions (session_id),
        created_at            TEXT NOT NULL,
        updated_at            TEXT NOT NULL,
        origin_json           TEXT,
        display_name          TEXT,
        platform              TEXT,
        chat_type             TEXT NOT NULL DEFAULT 'dm',
        input_tokens          INTEGER NOT NULL DEFAULT 0,
        output_tokens         INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens     INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens    INTEGER NOT NULL DEFAULT 0,
        total_tokens          INTEGER NOT NULL DEFAULT 0,
        last_prompt_tokens    INTEGER NOT NULL DEFAULT 0,
        estimated_cost_usd    REAL NOT NULL DEFAULT 0,
        cost_status           TEXT NOT NULL DEFAULT 'unknown',
        was_auto_reset        INTEGER NOT NULL DEFAULT 0,
        auto_reset_reason     TEXT,
        reset_had_activity    INTEGER NOT NULL DEFAULT 0,
        is_fresh_reset        INTEGER NOT NULL DEFAULT 0,
        expiry_finalized      INTEGER NOT NULL DEFAULT 0,
        suspended             INTEGER NOT NULL DEFAULT 0,
        resume_pending        INTEGER NOT NULL DEFAULT 0,
        resume_reason         TEXT,
        last_resume_marked_at TEXT
      ) STRICT;
      -- listSessions walks this index a page at a time: cost follows the page, not the table.
      CREATE INDEX routes_by_recency ON routes (updated_at DESC, session_key DESC);
      CREATE INDEX routes_by_session ON routes (session_id);

      -- Canonical transcript messages. Soft-deleted rows (rewind, rewrite) stay for audit.
      CREATE TABLE messages (
        id            INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id    TEXT NOT NULL REFERENCES sessions (session_id),
        role          TEXT NOT NULL,
        content       TEXT,
        extra_json    TEXT,
        created_at    TEXT NOT NULL,
        removed_at    TEXT,
        removed_by    TEXT,
        rewind_id     INTEGER REFERENCES rewinds (id)
      ) STRICT;
      CREATE INDEX messages_by_session ON messages (session_id, id);

      CREATE TABLE rewinds (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id      TEXT NOT NULL REFERENCES sessions (session_id),
        rewound_at      TEXT NOT NULL,
        turns_requested INTEGER NOT NULL,
        turns_undone    INTEGER NOT NULL,
        rewound_count   INTEGER NOT NULL,
        first_message_id INTEGER,
        target_text     TEXT
      ) STRICT;

      -- A turn in flight on a key; survives a crash so recovery can resume exactly those turns.
      CREATE TABLE turn_markers (
        session_key      TEXT PRIMARY KEY,
        session_id       TEXT NOT NULL,
        started_at       TEXT NOT NULL,
        started_at_epoch INTEGER NOT NULL
      ) STRICT;

      -- STO-4: the full-text index is derived from messages and may be dropped or rebuilt at will.
      CREATE TABLE search_index_state (
        id    INTEGER PRIMARY KEY CHECK (id = 1),
        stale INTEGER NOT NULL
      ) STRICT;
      INSERT INTO search_index_state (id, stale) VALUES (1, 0);
      CREATE VIRTUAL TABLE messages_fts USING fts5 (content, content = 'messages', content_rowid = 'id');
    `);
  },
};
