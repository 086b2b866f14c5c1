/**
 * 023: managing local sessions (issue 31): archiving and forks.
 *
 * - `local_sessions.archived_at`: set by session.archive. An archived session is left out of the
 *   default session lists; it is still searchable, resumable and listed with `archived: true`.
 * - `local_sessions.forked_from` + `forked_message_id`: a fork is a new local session whose first
 *   transcript was copied from another session's up to one message. The link lives on the logical
 *   row, not in `sessions.parent_session_id`: that column is the LIN-3 chain of one session, and a
 *   second child there would read as a planted fork. No foreign key: the source may be deleted.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 23,
  name: 'session_manage',
  up(db) {
    db.exec(`
      ALTER TABLE local_sessions ADD COLUMN archived_at TEXT;
      ALTER TABLE local_sessions ADD COLUMN forked_from TEXT;
      ALTER TABLE local_sessions ADD COLUMN forked_message_id INTEGER;
      CREATE INDEX local_sessions_by_fork ON local_sessions (forked_from) WHERE forked_from IS NOT NULL;
    `);
  },
};
