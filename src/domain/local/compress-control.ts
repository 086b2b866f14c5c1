/**
 * Compression of a local session as the service offers it (LIN-1): in a running turn's slot
 * (`inSlot`, the turn's context budget calls it) and on request (`session.compress`, in the slot
 * taken with TurnScheduler.exclusive). The work itself is compressLocalSession (compression.ts).
 */
import type { CompressionReason, CompressOutcome } from '../../runtime/context/budget.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import type { AccessRow } from './access.js';
import { compressLocalSession, type LocalCompressionDeps } from './compression.js';
import type { PublicEvent } from './hub.js';
import type { ReceiptGate } from './receipt-gate.js';
import type { TurnScheduler } from './scheduler.js';
import type { LocalEvents } from './events.js';

export interface CompressContext {
  store: LocalSessionStore;
  sessions: SessionStore;
  /** The summary model and context settings; without them nothing compresses. */
  compression: Pick<LocalCompressionDeps, 'model' | 'settings'> | undefined;
  scheduler: TurnScheduler;
  receipts: ReceiptGate;
  events: TypedEmitter<LocalEvents>;
  apiKey(logicalId: string): string | undefined;
  access(principal: Principal, logicalId: string): Promise<AccessRow>;
  publish(logicalId: string, event: PublicEvent): void;
  assertAccepting(): void;
  /** Named test-only fault points (crash tests); inert in production. */
  fault?: (point: string) => void;
}

export class SessionCompressor {
  constructor(private readonly ctx: CompressContext) {}

  /** Compresses a session whose turn slot the caller holds (a running turn, or compress below). */
  inSlot(logicalId: string, reason: CompressionReason, signal?: AbortSignal): Promise<CompressOutcome> {
    const { compression, receipts } = this.ctx;
    if (!compression) return Promise.resolve({ kind: 'skipped', reason: 'compression is not configured' });
    return compressLocalSession(
      {
        ...compression,
        store: this.ctx.store,
        sessions: this.ctx.sessions,
        apiKey: (id) => this.ctx.apiKey(id),
        receipt: (id) => receipts.get(id),
        advanced: (receipt) => receipts.admit(receipt),
        publish: (id, event) => this.ctx.publish(id, event),
        fault: (point) => this.ctx.fault?.(point),
        replaced: (id, sessionId) =>
          this.ctx.events.emit('transcript:replaced', {
            logical_id: id,
            kind: 'compression',
            session_id: sessionId,
          }),
      },
      logicalId,
      reason,
      signal,
    );
  }

  /**
   * session.compress: compresses now, in the session's turn slot (after a running turn ends; queued
   * admissions wait for it). Fenced like the other controls: a given execution_generation must be
   * the session's current one.
   */
  async compress(
    principal: Principal,
    logicalId: string,
    generation: number | undefined,
  ): Promise<Record<string, unknown>> {
    this.ctx.assertAccepting();
    await this.ctx.access(principal, logicalId);
    const current = (await this.ctx.store.getLocalSession(logicalId))?.generation ?? 0;
    if (generation !== undefined && generation !== current) {
      throw new GatewayError(
        'stale_generation',
        `execution_generation ${generation} is not the current one`,
        {
          current,
        },
      );
    }
    if (!(await this.ctx.receipts.ensure(logicalId))) {
      throw new GatewayError('permission_denied', `session ${logicalId} is paused: its receipt is invalid`, {
        session_id: logicalId,
      });
    }
    const outcome = await this.ctx.scheduler.exclusive(logicalId, () => this.inSlot(logicalId, 'manual'));
    return outcome.kind === 'compressed'
      ? { session_id: logicalId, compressed: true, messages: outcome.messages.length }
      : { session_id: logicalId, compressed: false, why: outcome.reason };
  }
}
