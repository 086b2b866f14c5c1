/**
 * The shapes of RPC results that more than one client reads (the CLI and the dashboard), declared
 * once beside the wire types. Types only: no I/O, no Node types, so the dashboard bundles it.
 */

/** One remembered approval, as `approvals.list` returns it (issue 25). */
export interface RememberedApprovalRow {
  /** `apr_` + 16 hex digits: what `approvals.revoke` takes. */
  id: string;
  scope: 'session' | 'always';
  /** Whose prompt broker remembers it: local sessions or chat platforms. */
  surface: 'local' | 'platform';
  session_id: string | null;
  kind: 'command' | 'edit';
  cwd: string;
  /** The command as the human saw it (secret values masked). */
  shown: string;
  created_at: string;
}

export interface ApprovalsListResult {
  approvals: RememberedApprovalRow[];
}

/** One row of `audit.list` (issue 30): who did what to which session, and how it ended. */
export interface AuditRow {
  id: number;
  at: string;
  principal: string;
  path: string;
  action: string;
  session_id: string | null;
  outcome: string;
  detail: Record<string, unknown> | null;
}
