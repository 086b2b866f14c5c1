/**
 * 022: who may use whose session, and who did what (issue 30, docs/identity.md). `session_shares`
 * holds the levels operators granted members; `audit_log` is append-only: nothing updates or
 * deletes its rows (triggers refuse it), so a trail once written stays as written.
 */
import type { Migration } from '../migration.js';

export const migration: Migration = {
  version: 22,
  name: 'access',
  up(db) {
    db.exec(`
      CREATE TABLE session_shares (
        logical_id TEXT NOT NULL,
        member     TEXT NOT NULL,
        level      TEXT NOT NULL CHECK (level IN ('read', 'submit', 'full')),
        granted_by TEXT NOT NULL,
        granted_at TEXT NOT NULL,
        PRIMARY KEY (logical_id, member)
      ) STRICT;
      CREATE INDEX session_shares_by_member ON session_shares (member);
      CREATE TABLE audit_log (
        id         INTEGER PRIMARY KEY AUTOINCREMENT,
        at         TEXT NOT NULL,
        principal  TEXT NOT NULL,
        path       TEXT NOT NULL,
        action     TEXT NOT NULL,
        session_id TEXT,
        outcome    TEXT NOT NULL,
        detail     TEXT
      ) STRICT;
      CREATE INDEX audit_log_by_session ON audit_log (session_id, id);
      CREATE INDEX audit_log_by_principal ON audit_log (principal, id);
      CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
      CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
    `);
  },
};
