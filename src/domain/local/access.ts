/**
 * Who may do what to a local session (SPEC AUTH-4): the owner, or an operator of the same profile
 * (shared access, not shared identity), or a principal bound to named sessions (a worker-adoption
 * ticket) on exactly those. Capabilities are checked per operation by the dispatcher;
 * this adds the per-session fence. Pure.
 */
import { GatewayError } from '../errors.js';
import { isMember, isOperator, type Principal } from '../auth/principal.js';
import type { LocalSessionRow } from '../ports/local-store.js';
import type { OwnerRef } from './receipt.js';

/**
 * What access decisions read of a local session: every field but the execution generation, which
 * changes with each claim (read the store for it). These fields change only when a receipt check
 * pauses or unpauses the session, so after that check a copy may be kept for the epoch.
 */
export type AccessRow = Omit<LocalSessionRow, 'generation'>;

/** An AccessRow copy of a row (without its generation). */
export function accessFacts(row: LocalSessionRow): AccessRow {
  const { generation: _generation, ...facts } = row;
  return facts;
}

export function ownerOf(principal: Principal): OwnerRef {
  return { subject: principal.subject, provider: principal.provider };
}

export function isOwner(principal: Principal, session: AccessRow): boolean {
  return session.owner.subject === principal.subject && session.owner.provider === principal.provider;
}

/**
 * Whether the principal may reach the session at all. `shared`: whether (or which sessions) an
 * operator shared with this member (shares.ts); what the member may do there is bounded per
 * operation by the share's level (AccessCache.authorize).
 */
export function mayAccess(
  principal: Principal,
  session: AccessRow,
  shared: boolean | ReadonlySet<string> = false,
): boolean {
  if (principal.profile !== session.profile) return false;
  if (principal.sessions !== undefined) return principal.sessions.includes(session.logical_id);
  if (isOwner(principal, session) || isOperator(principal)) return true;
  if (!isMember(principal)) return false;
  return typeof shared === 'boolean' ? shared : shared.has(session.logical_id);
}

/**
 * The session, or a `not_found` error — also when it exists but the caller may not see it, so a
 * foreign caller learns nothing about which ids exist. A principal bound to named sessions asking
 * for any other id is told `permission_denied`, whether or not that id exists.
 */
export function requireAccess<Row extends AccessRow>(
  principal: Principal,
  session: Row | null,
  logicalId: string,
  shared = false,
): Row {
  if (principal.sessions !== undefined && !principal.sessions.includes(logicalId)) {
    throw new GatewayError(
      'permission_denied',
      `this connection is bound to the sessions its ticket names, and ${logicalId} is not one of them`,
      { session_id: logicalId },
    );
  }
  if (!session || !mayAccess(principal, session, shared)) {
    throw new GatewayError('not_found', `no session ${logicalId} that you may access`, {
      session_id: logicalId,
    });
  }
  return session;
}
