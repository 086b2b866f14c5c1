/**
 * 009 on PostgreSQL: the per-transcript edit counter, bumped by triggers on every change to a stored
 * message other than an append (as SQLite's 009 does).
 */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 9,
  name: 'transcript_edits',
  sql: `
    ALTER TABLE sessions ADD COLUMN transcript_edits BIGINT NOT NULL DEFAULT 0;

    CREATE FUNCTION gatehouse_messages_edited() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'DELETE' THEN
        UPDATE sessions SET transcript_edits = transcript_edits + 1 WHERE session_id = OLD.session_id;
        RETURN OLD;
      END IF;
      UPDATE sessions SET transcript_edits = transcript_edits + 1
       WHERE session_id IN (OLD.session_id, NEW.session_id);
      RETURN NEW;
    END $$;

    CREATE TRIGGER messages_edited AFTER UPDATE OF role, content, extra_json, removed_at, session_id
      ON messages FOR EACH ROW EXECUTE FUNCTION gatehouse_messages_edited();
    CREATE TRIGGER messages_deleted AFTER DELETE ON messages
      FOR EACH ROW EXECUTE FUNCTION gatehouse_messages_edited();
  `,
};
