/**
 * The receipt gate (REC-1): a local session's creation receipt is checked against the store and the
 * daemon's profile before the session's first use in each epoch, then cached. A receipt that fails
 * pauses the session — logged and announced once, when the pause starts — and nothing of it runs.
 */
import type { LocalSessionStore } from '../ports/local-store.js';
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
  /** Checks in flight, by logical id. */
  private readonly checking = new Map<string, Promise<boolean>>();

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

  /**
   * Forgets the session's validated receipt: the next use reads the store again. A cluster member
   * calls it when it takes a session over, since another instance may have advanced the receipt.
   */
  forget(logicalId: string): void {
    this.validated.delete(logicalId);
  }

  /**
   * Forgets the validated receipt when the store's route no longer points at its transcript (a
   * reset or a compression moved it on) or the session moved to another model (session.model). In a cluster an instance not holding the session's lease
   * calls it before using the session: the holder may have moved it on meanwhile. True: forgotten.
   */
  async refresh(logicalId: string): Promise<boolean> {
    const known = this.validated.get(logicalId);
    if (!known) return false;
    const { routedSessionId, raw } = await this.store.readReceiptEvidence(logicalId);
    if (routedSessionId === known.current_session_id && modelChanges(raw) === modelChangesOf(known))
      return false;
    this.validated.delete(logicalId);
    return true;
  }

  /**
   * True when the session may run: its receipt agrees with the store and this profile. Checks of
   * one session are serialised (one in flight, later callers share its answer), so a refused receipt
   * pauses the session and is announced once however many requests arrive together.
   */
  ensure(logicalId: string): Promise<boolean> {
    if (this.validated.has(logicalId)) return Promise.resolve(true);
    const pending = this.checking.get(logicalId);
    if (pending) return pending;
    const check = this.validate(logicalId).finally(() => this.checking.delete(logicalId));
    this.checking.set(logicalId, check);
    return check;
  }

  private async validate(logicalId: string): Promise<boolean> {
    const check = await this.check(logicalId);
    if (check.ok) {
      this.validated.set(logicalId, check.receipt);
      const row = await this.store.getLocalSession(logicalId);
      if (row?.paused_reason?.startsWith(PAUSE_PREFIX)) await this.store.setPaused(logicalId, null);
      return true;
    }
    const reason = `${PAUSE_PREFIX}${check.failure}: ${check.detail}`;
    if ((await this.store.getLocalSession(logicalId))?.paused_reason === reason) return false;
    await this.store.setPaused(logicalId, reason);
    this.hooks.paused(logicalId, check.failure, check.detail);
    return false;
  }

  /** REC-1 on the receipt and its route, then LIN-3 on every step of its lineage. */
  private async check(logicalId: string): Promise<ReceiptCheck> {
    const evidence = await this.store.readReceiptEvidence(logicalId);
    const check = checkReceipt({ logicalId, ...evidence }, this.profile);
    if (!check.ok) return check;
    const facts = await this.store.readLineageFacts(lineageChain(check.receipt));
    const lineage = checkLineage(check.receipt, facts, localSessionKey(logicalId));
    return lineage.ok ? check : lineage;
  }
}

const modelChangesOf = (receipt: { model_changes?: readonly unknown[] | undefined }): number =>
  receipt.model_changes?.length ?? 0;

/** How many model changes a stored receipt records (-1 when it is unreadable: validate it again). */
function modelChanges(raw: string | null): number {
  if (raw === null) return -1;
  try {
    return modelChangesOf(JSON.parse(raw) as { model_changes?: unknown[] });
  } catch {
    return -1;
  }
}
