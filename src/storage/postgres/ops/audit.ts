/** The append-only audit log on PostgreSQL (migration 022): one row, in the caller's transaction. */
import type { AuditEntry } from '../../../domain/ports/access-store.js';
import type { Sql } from '../database.js';

export async function insertAudit(sql: Sql, entry: AuditEntry): Promise<void> {
  await sql.run(
    `INSERT INTO audit_log (at, principal, path, action, session_id, outcome, detail)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [
      entry.at,
      entry.principal,
      entry.path,
      entry.action,
      entry.session_id,
      entry.outcome,
      entry.detail === null ? null : JSON.stringify(entry.detail),
    ],
  );
}
