/**
 * The receipt gate (REC-1): a local session's creation receipt is checked against the store and the
 * daemon's profile before the session's first use in each epoch, then cached. A receipt that fails
 * pauses the session — logged and announced once, when the pause starts — and nothing of it runs.
 */
import type { LocalSessionStore } from '../../storage/local-store.js';
import { checkLineage, lineageChain } from './lineage.js';
import {
  checkReceipt,
  localSessionKey,
  type CreationReceipt,
  type ReceiptCheck,
  type ReceiptFailure,
} from './receipt.js';

export interface ReceiptGateHooks {
  paused(logicalId: string, failure: ReceiptFailure, detail: string): void;
}

const PAUSE_PREFIX = 'receipt ';

export class ReceiptGate {
  private readonly validated = new Map<string, CreationReceipt>();

  constructor(
    private readonly store: LocalSessionStore,
    private readonly profile: string,
    private readonly hooks: ReceiptGateHooks,
  ) {}

  /** The receipt validated in this epoch, or undefined when not (yet) validated or refused. */
  get(logicalId: string): CreationReceipt | undefined {
    return this.validated.get(logicalId);
  }

  /** A receipt this daemon just wrote in a transaction (creation, reset, compression). */
  admit(receipt: CreationReceipt): void {
    this.validated.set(receipt.logical_id, receipt);
  }

  /** True when the session may run: its receipt agrees with the store and this profile. */
  ensure(logicalId: string): boolean {
    if (this.validated.has(logicalId)) return true;
    const check = this.check(logicalId);
    if (check.ok) {
      this.validated.set(logicalId, check.receipt);
      const row = this.store.getLocalSession(logicalId);
      if (row?.paused_reason?.startsWith(PAUSE_PREFIX)) this.store.setPaused(logicalId, null);
      return true;
    }
    const reason = `${PAUSE_PREFIX}${check.failure}: ${check.detail}`;
    if (this.store.getLocalSession(logicalId)?.paused_reason === reason) return false;
    this.store.setPaused(logicalId, reason);
    this.hooks.paused(logicalId, check.failure, check.detail);
    return false;
  }

  /** REC-1 on the receipt and its route, then LIN-3 on every step of its lineage. */
  private check(logicalId: string): ReceiptCheck {
    const check = checkReceipt({ logicalId, ...this.store.readReceiptEvidence(logicalId) }, this.profile);
    if (!check.ok) return check;
    const facts = this.store.readLineageFacts(lineageChain(check.receipt));
    const lineage = checkLineage(check.receipt, facts, localSessionKey(logicalId));
    return lineage.ok ? check : lineage;
  }
}
