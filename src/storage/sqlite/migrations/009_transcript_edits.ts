/**
 * 009: a per-transcript edit counter, so a cached copy of a transcript (the agent cache, AGC-1) can
 * tell in O(1) whether the stored one changed other than by appending.
 *
 * Appends are seen by reading the messages after the copy's last id; every other change — a soft
 * delete (rewind, rewrite), a hard delete, an edit of a stored message — bumps `transcript_edits`
 * through triggers, whatever code path makes it. A copy whose counter differs is rebuilt.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 9,
  name: 'transcript_edits',
  up(db) {
    db.exec(`
      ALTER TABLE sessions ADD COLUMN transcript_edits INTEGER NOT NULL DEFAULT 0;

      CREATE TRIGGER messages_edited AFTER UPDATE OF role, content, extra_json, removed_at, session_id
        ON messages
      BEGIN
        UPDATE sessions SET transcript_edits = transcript_edits + 1
         WHERE session_id IN (OLD.session_id, NEW.session_id);
      END;

      CREATE TRIGGER messages_deleted AFTER DELETE ON messages
      BEGIN
        UPDATE sessions SET transcript_edits = transcript_edits + 1 WHERE session_id = OLD.session_id;
      END;
    `);
  },
};
