/** The append-only audit log on SQLite (migration 022): one row, in the caller's transaction. */
import type Database from 'better-sqlite3';
import type { AuditEntry } from '../../../domain/ports/access-store.js';
import { statement } from '../statements.js';

export function insertAudit(db: Database.Database, entry: AuditEntry): void {
  statement(
    db,
    `INSERT INTO audit_log (at, principal, path, action, session_id, outcome, detail)
     VALUES (@at, @principal, @path, @action, @session_id, @outcome, @detail)`,
  ).run({ ...entry, detail: entry.detail === null ? null : JSON.stringify(entry.detail) });
}
