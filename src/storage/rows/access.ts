/** Rows of session_shares and audit_log as both backends read them (migration 022). */
import type { SessionShare, ShareLevel } from '../../domain/auth/shares.js';
import type { AuditAction, AuditRow } from '../../domain/ports/access-store.js';

export function shareRow(row: Record<string, unknown>): SessionShare {
  return {
    logical_id: String(row.logical_id),
    member: String(row.member),
    level: row.level as ShareLevel,
    granted_by: String(row.granted_by),
    granted_at: String(row.granted_at),
  };
}

export function auditRow(row: Record<string, unknown>): AuditRow {
  return {
    id: Number(row.id),
    at: String(row.at),
    principal: String(row.principal),
    path: String(row.path),
    action: row.action as AuditAction,
    session_id: typeof row.session_id === 'string' ? row.session_id : null,
    outcome: String(row.outcome),
    detail: typeof row.detail === 'string' ? (JSON.parse(row.detail) as Record<string, unknown>) : null,
  };
}
