/** 022 on PostgreSQL: session shares and the append-only audit log (as SQLite's 022). */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 22,
  name: 'access',
  sql: `
    CREATE TABLE session_shares (
      logical_id TEXT NOT NULL,
      member     TEXT NOT NULL,
      level      TEXT NOT NULL CHECK (level IN ('read', 'submit', 'full')),
      granted_by TEXT NOT NULL,
      granted_at TEXT NOT NULL,
      PRIMARY KEY (logical_id, member)
    );
    CREATE INDEX session_shares_by_member ON session_shares (member);
    CREATE TABLE audit_log (
      id         BIGSERIAL PRIMARY KEY,
      at         TEXT NOT NULL,
      principal  TEXT NOT NULL,
      path       TEXT NOT NULL,
      action     TEXT NOT NULL,
      session_id TEXT,
      outcome    TEXT NOT NULL,
      detail     TEXT
    );
    CREATE INDEX audit_log_by_session ON audit_log (session_id, id);
    CREATE INDEX audit_log_by_principal ON audit_log (principal, id);
    CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'audit_log is append-only'; END $$;
    CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON audit_log
      FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
  `,
};
