/**
 * The per-session access check on the hot path (AUTH-4, REC-1): every call on a session passes here.
 * The first check of an epoch validates the session's receipt, which may pause or unpause the row;
 * after it the access facts (access.ts) cannot change, so they are kept and the store is not read
 * again until the session is released, taken over or retitled.
 */
import type { LocalSessionStore } from '../ports/local-store.js';
import type { Principal } from '../auth/principal.js';
import { accessFacts, requireAccess, type AccessRow } from './access.js';
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
  ) {}

  /** The session if the principal may use it, with its receipt validated (or a clear refusal). */
  async access(principal: Principal, logicalId: string): Promise<AccessRow> {
    // In a cluster the receipt changes only under the session's lease (SCL-1): one validated here
    // is current while this instance holds it, and is checked against the store otherwise.
    const ownership = this.ownership;
    if (ownership && !ownership.owns(logicalId) && (await this.receipts.refresh(logicalId)))
      this.checked.delete(logicalId);
    const known = this.checked.get(logicalId);
    if (known) return requireAccess(principal, known, logicalId);
    const session = requireAccess(principal, await this.store.getLocalSession(logicalId), logicalId);
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
