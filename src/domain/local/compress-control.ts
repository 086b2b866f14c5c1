/**
 * Compression of a local session as the service offers it (LIN-1): in a running turn's slot
 * (`inSlot`, the turn's context budget calls it) and on request (`session.compress`, in the slot
 * taken with TurnScheduler.exclusive). The work itself is compressLocalSession (compression.ts).
 */
import { randomBytes } from 'node:crypto';
import type { CompressionReason, CompressOutcome } from '../../runtime/context/budget.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { BudgetGuard } from '../budget/guard.js';
import { LOCAL_BUDGET_HINT } from './budgets.js';
import { localSessionKey } from './receipt.js';
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
  /** The budget guard: a session.compress's summary calls are reserved and settled like a turn's. */
  budget?: BudgetGuard;
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

  /**
   * Compresses a session whose turn slot the caller holds (a running turn, or compress below), the
   * summary written by `model` where one is given (a turn's own, budget-guarded).
   */
  inSlot(
    logicalId: string,
    reason: CompressionReason,
    signal?: AbortSignal,
    model?: ChatModel,
  ): Promise<CompressOutcome> {
    const { compression, receipts } = this.ctx;
    if (!compression) return Promise.resolve({ kind: 'skipped', reason: 'compression is not configured' });
    return compressLocalSession(
      {
        ...compression,
        ...(model ? { model: () => model } : {}),
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
    const outcome = await this.ctx.scheduler.exclusive(logicalId, () =>
      this.inSlot(logicalId, 'manual', undefined, this.guarded(principal, logicalId)),
    );
    return outcome.kind === 'compressed'
      ? { session_id: logicalId, compressed: true, messages: outcome.messages.length }
      : { session_id: logicalId, compressed: false, why: outcome.reason };
  }

  /**
   * session.compress's summary model, budget-guarded: its calls are reserved and settled as the
   * caller's, under an id of their own (no turn owns them), at a price not known before the call
   * (the session's price lives with its turns; what the provider reports is settled).
   */
  private guarded(principal: Principal, logicalId: string): ChatModel | undefined {
    const { budget, compression, receipts } = this.ctx;
    const receipt = receipts.get(logicalId);
    if (!budget || !compression || !receipt) return undefined;
    const turnId = `compress_${randomBytes(9).toString('base64url')}`;
    return budget.guard(compression.model(receipt.policy, this.ctx.apiKey(logicalId)), {
      sessionKey: localSessionKey(logicalId),
      principal: principal.subject,
      turnId,
      sessionLimit: receipt.policy.budget ?? null,
      price: null,
      hint: LOCAL_BUDGET_HINT,
      emit: (event) => this.ctx.publish(logicalId, { ...event }),
    });
  }
}
