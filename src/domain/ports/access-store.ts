/**
 * Who may use whose session, and who did what (issue 30, migration 022): the shares an operator
 * granted members, and the append-only audit trail. Both backends implement it on the session
 * store's database and pass the same shared suite.
 */
import type { SessionShare, ShareLevel } from '../auth/shares.js';

export const AUDIT_ACTIONS = [
  'created',
  'submitted',
  'approved',
  'denied',
  'answered',
  'interrupted',
  'reset',
  'shared',
  'unshared',
  'signed_in',
  'signed_out',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One audit row as it is appended. */
export interface AuditEntry {
  /** ISO-8601 UTC. */
  at: string;
  /** The acting principal's subject (`native:owner`, `member:alice`, `oidc:…`). */
  principal: string;
  /** The path the action came by: `websocket`, `http`, `dashboard`, `oidc`, `control`, a platform. */
  path: string;
  action: AuditAction;
  /** The logical session acted on, when there is one. */
  session_id: string | null;
  /** `ok`, or the refusal's stable reason (`not_found`, `permission_denied`, `refused`…). */
  outcome: string;
  /** Small structured facts (a share's member and level, a sign-in's role); message text only when configured. */
  detail: Record<string, unknown> | null;
}

/**
 * The row of one audited call, handed to the action it records so both commit in ONE store
 * transaction: a crash or a failed commit leaves neither, never one without the other. The store
 * operation writes `entry` (with the session it acted on) and the caller sets `recorded` once that
 * commit is durable; a call whose row was not recorded so (refused, or it committed nothing) gets
 * its row written on its own.
 */
export interface AuditDraft {
  readonly entry: AuditEntry;
  recorded: boolean;
}

/** The draft's row for the session acted on, or null without a draft. */
export function auditRowFor(draft: AuditDraft | undefined, logicalId: string): AuditEntry | null {
  return draft ? { ...draft.entry, session_id: logicalId } : null;
}

export interface AuditRow extends AuditEntry {
  /** Increasing: the order rows were appended in. */
  id: number;
}

export interface AuditQuery {
  limit: number;
  /** Rows older than this id (the previous page's last id). */
  before_id?: number | undefined;
  session_id?: string | undefined;
  principal?: string | undefined;
}

export interface AccessStore {
  /** Grants (or changes) a member's level on a session; `audit`: its row, in the same commit. */
  share(share: SessionShare, audit?: AuditEntry | null): Promise<void>;
  /** Revokes it; false when there was none. `audit`: its row, in the same commit. */
  unshare(logicalId: string, member: string, audit?: AuditEntry | null): Promise<boolean>;
  /** The member's level on the session, or null. */
  shareOf(logicalId: string, member: string): Promise<ShareLevel | null>;
  /** Every session shared with the member, and its level. */
  sharesOf(member: string): Promise<ReadonlyMap<string, ShareLevel>>;
  /** Who the session is shared with. */
  sharesOn(logicalId: string): Promise<SessionShare[]>;
  /** Appends one audit row; rows are never changed or deleted. */
  appendAudit(entry: AuditEntry): Promise<void>;
  /** Newest first. */
  listAudit(query: AuditQuery): Promise<AuditRow[]>;
}
