/**
 * The per-session access check on the hot path (AUTH-4, REC-1): every call on a session passes here.
 * The first check of an epoch validates the session's receipt, which may pause or unpause the row;
 * after it the access facts (access.ts) cannot change, so they are kept and the store is not read
 * again until the session is released, taken over or retitled.
 */
import type { LocalSessionStore } from '../ports/local-store.js';
import type { AccessStore } from '../ports/access-store.js';
import { isMember, isOperator, type Capability, type Principal } from '../auth/principal.js';
import { levelAllows } from '../auth/shares.js';
import { GatewayError } from '../errors.js';
import { accessFacts, isOwner, requireAccess, type AccessRow } from './access.js';
import type { ReceiptGate } from './receipt-gate.js';
import type { SessionOwnership } from './scheduler.js';

export class AccessCache {
  /** Access facts of sessions whose receipt was validated in this epoch. */
  private readonly checked = new Map<string, AccessRow>();

  constructor(
    private readonly store: LocalSessionStore,
    private readonly receipts: ReceiptGate,
    /** In a cluster (SCL-1): which sessions this instance holds the lease of. */
    private readonly ownership: SessionOwnership | undefined,
    /** Shares operators granted members (issue 30); null: nothing is shared. */
    private readonly shares: Pick<AccessStore, 'shareOf' | 'sharesOf'> | null = null,
  ) {}

  /**
   * Whether the session was shared with this member. Read from the store on every call (not kept
   * with the access facts), so a revocation holds at the member's very next call, on any instance.
   */
  private async shared(principal: Principal, session: AccessRow | null, logicalId: string): Promise<boolean> {
    if (!session || !this.shares || !isMember(principal) || isOwner(principal, session)) return false;
    return (await this.shares.shareOf(logicalId, principal.subject)) !== null;
  }

  /** The sessions shared with this member (empty for anyone else): what lists and search may show. */
  async sharedWith(principal: Principal): Promise<ReadonlySet<string>> {
    if (!this.shares || !isMember(principal)) return new Set();
    return new Set((await this.shares.sharesOf(principal.subject)).keys());
  }

  /**
   * The per-session fence of one call (issue 30): the caller may reach the session (else
   * `not_found`), and a member whose access is a share holds a level that allows `capability`.
   * Operators, owners and bound workers are decided by access() alone.
   */
  async authorize(principal: Principal, logicalId: string, capability: Capability): Promise<void> {
    if (isOperator(principal) || !isMember(principal)) return;
    const session = await this.access(principal, logicalId);
    if (isOwner(principal, session)) return;
    const level = (await this.shares?.shareOf(logicalId, principal.subject)) ?? null;
    if (level === null)
      throw new GatewayError('not_found', `no session ${logicalId} that you may access`, {
        session_id: logicalId,
      });
    if (!levelAllows(level, capability))
      throw new GatewayError(
        'share_level',
        `session ${logicalId} is shared with you at level "${level}", which does not include ${capability}; ask an operator for more`,
        { session_id: logicalId, level, capability },
      );
  }

  /** The session if the principal may use it, with its receipt validated (or a clear refusal). */
  async access(principal: Principal, logicalId: string): Promise<AccessRow> {
    // In a cluster the receipt changes only under the session's lease (SCL-1): one validated here
    // is current while this instance holds it, and is checked against the store otherwise.
    const ownership = this.ownership;
    if (ownership && !ownership.owns(logicalId) && (await this.receipts.refresh(logicalId)))
      this.checked.delete(logicalId);
    const known = this.checked.get(logicalId);
    if (known)
      return requireAccess(principal, known, logicalId, await this.shared(principal, known, logicalId));
    const row = await this.store.getLocalSession(logicalId);
    const session = requireAccess(principal, row, logicalId, await this.shared(principal, row, logicalId));
    // The first use in this epoch validates the receipt, which may pause or unpause the row.
    const valid = await this.receipts.ensure(logicalId);
    const fresh = (await this.store.getLocalSession(logicalId)) ?? session;
    if (valid) this.checked.set(logicalId, accessFacts(fresh));
    return fresh;
  }

  /** The session's title was stored: the kept facts (which session.info reads) follow it. */
  retitled(logicalId: string, title: string): void {
    const known = this.checked.get(logicalId);
    if (known) this.checked.set(logicalId, { ...known, title });
  }

  /** The next access reads the store again (the session was released or taken over). */
  forget(logicalId: string): void {
    this.checked.delete(logicalId);
  }
}
