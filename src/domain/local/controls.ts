/**
 * The transcript controls of a local session (LIN-2, STO-2): reset, undo and retry. Each one
 *
 * - runs in the session's turn slot (TurnScheduler.control): never beside a running turn, and
 *   refused with `session_busy` while one runs — the caller waits for it to settle or interrupts it;
 * - is one store transaction, committed before anything in memory changes;
 * - is idempotent by the caller's `request_id`: a retry after a lost answer gets the same result
 *   (`duplicate: true`) and changes nothing;
 * - leaves the logical row alone: admissions (their ids, digests, owners, generations, an
 *   `unknown` one included), the frozen policy and the owner binding stay as they are.
 *
 * Viewers get a public event (`session.reset`, `transcript.rewound`); the agent cache gets the typed
 * `transcript:replaced` event.
 */
import { randomBytes } from 'node:crypto';
import { auditRowFor, type AuditDraft } from '../ports/access-store.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import { newSessionId } from '../session/lifecycle.js';
import { ownerOf, type AccessRow } from './access.js';
import { newAdmissionId } from './admission.js';
import type { PublicEvent } from './hub.js';
import { bindingOf, refusePaused } from './inputs.js';
import { checkListedModel, type ProviderCatalogue } from './launch-context.js';
import { LaunchPolicyError } from './launch-params.js';
import type { CreationReceipt } from './receipt.js';
import { elsewhereBusy, type TurnScheduler } from './scheduler.js';
import type { LocalEvents } from './events.js';
import type { ModelParams } from './relayed-controls.js';

export interface ControlContext {
  store: LocalSessionStore;
  scheduler: TurnScheduler;
  events: TypedEmitter<LocalEvents>;
  access(principal: Principal, logicalId: string): Promise<AccessRow>;
  /** The receipt validated in this epoch (access() validated it). */
  receipt(logicalId: string): CreationReceipt | undefined;
  /** Records a receipt this daemon just committed. */
  admitReceipt(receipt: CreationReceipt): void;
  publish(logicalId: string, event: PublicEvent): void;
  assertAccepting(): void;
  now(): Date;
  /** Named test-only fault points (crash tests); inert in production. */
  fault?: (point: string) => void;
  /** Drops the in-memory api_key of a session moved off the endpoint it was given for. */
  forgetApiKey?(logicalId: string): void;
  /** The configured providers, which session.model checks a choice against; absent: it refuses. */
  providers?: ProviderCatalogue;
}

/** The submission_id of the admission a session.retry makes: derived, so a repeat finds it. */
export function retrySubmissionId(requestId: string): string {
  return `retry:${requestId}`;
}

export class SessionControls {
  constructor(private readonly ctx: ControlContext) {}

  async reset(
    principal: Principal,
    params: { session_id: string; request_id: string },
    /** The call's audit row, committed with the reset (issue 30). */
    audit?: AuditDraft,
  ): Promise<Record<string, unknown>> {
    const { session } = await this.open(principal, params.session_id);
    const now = this.ctx.now();
    // The receipt is read in the slot: in a cluster, taking the lease there re-reads it, since
    // another instance may have moved the session on (a compression, a reset) while it held it.
    const result = await this.inSlot(session.logical_id, () =>
      this.ctx.store.commitReset({
        logical_id: session.logical_id,
        expected_session_id: this.ctx.receipt(session.logical_id)!.current_session_id,
        new_session_id: newSessionId(now, randomBytes(4).toString('hex')),
        request_id: params.request_id,
        at: now.toISOString(),
        audit: auditRowFor(audit, session.logical_id),
      }),
    );
    if (result.kind === 'moved') {
      throw new Error(`session ${session.logical_id} moved on under its validated receipt`);
    }
    if (audit) audit.recorded = true;
    const step = result.receipt.lineage.findLast((s) => s.request_id === params.request_id)!;
    if (result.kind === 'reset') {
      this.ctx.fault?.('reset.committed');
      this.ctx.admitReceipt(result.receipt);
      this.ctx.publish(session.logical_id, { type: 'session.reset', at: step.at });
      this.ctx.events.emit('transcript:replaced', {
        logical_id: session.logical_id,
        kind: 'reset',
        session_id: step.to,
      });
    }
    return { session_id: session.logical_id, reset_at: step.at, duplicate: result.kind === 'duplicate' };
  }

  /**
   * session.model (issue 26 item 6): moves the session to another configured provider and model,
   * between turns (refused with `session_busy` while one runs). The next turn runs on the new one.
   */
  async model(principal: Principal, params: ModelParams): Promise<Record<string, unknown>> {
    const { session, receipt } = await this.open(principal, params.session_id);
    const id = session.logical_id;
    const providers = this.ctx.providers;
    if (!providers) throw new GatewayError('invalid_params', 'this gateway has no providers to choose from');
    const configured = providers.names.join(', ');
    const current = receipt.policy.provider;
    const provider =
      params.provider ?? (current !== null && providers.names.includes(current) ? current : null);
    if (provider === null || !providers.names.includes(provider)) {
      throw new LaunchPolicyError(
        'provider',
        provider === null
          ? `this session's provider "${current ?? 'its own base_url'}" is not configured: name one of ${configured}`
          : `unknown provider "${provider}"; configured: ${configured}`,
      );
    }
    checkListedModel(providers, provider, params.model);
    if (receipt.policy.reasoning !== null && !providers.acceptsReasoning(provider)) {
      throw new LaunchPolicyError(
        'provider',
        `provider "${provider}" takes no reasoning effort and this session asks for "${receipt.policy.reasoning}"`,
      );
    }
    const at = this.ctx.now().toISOString();
    const result = await this.inSlot(
      id,
      () => this.ctx.store.commitModel({ logical_id: id, provider, model: params.model, at }),
      'then repeat',
    );
    if (result.kind === 'missing') throw new Error(`session ${id} has no creation receipt`);
    const previous = { provider: receipt.policy.provider, model: receipt.policy.model };
    if (result.kind === 'changed') {
      if (!result.receipt.policy.requires_api_key) this.ctx.forgetApiKey?.(id);
      this.ctx.admitReceipt(result.receipt);
      this.ctx.publish(id, { type: 'session.model', provider, model: params.model, previous, at });
    }
    return { session_id: id, provider, model: params.model, previous, changed: result.kind === 'changed' };
  }

  async undo(
    principal: Principal,
    params: { session_id: string; request_id: string; turns: number },
  ): Promise<Record<string, unknown>> {
    const { session } = await this.open(principal, params.session_id);
    const id = session.logical_id;
    const undone = await this.inSlot(id, () =>
      this.ctx.store.commitRewind({
        logical_id: id,
        request_key: `${id}:undo:${params.request_id}`,
        turns: params.turns,
        at: this.ctx.now().toISOString(),
      }),
    );
    if (!undone.duplicate && undone.rewound_count > 0) this.rewound(id, undone);
    return {
      session_id: id,
      turns_undone: undone.turns_undone,
      rewound_count: undone.rewound_count,
      target_text: undone.target_text,
      duplicate: undone.duplicate,
    };
  }

  async retry(
    principal: Principal,
    params: { session_id: string; request_id: string },
  ): Promise<Record<string, unknown>> {
    const { session } = await this.open(principal, params.session_id);
    const id = session.logical_id;
    const submissionId = retrySubmissionId(params.request_id);
    const result = await this.inSlot(id, () =>
      this.ctx.store.commitRetry({
        admission: {
          admission_id: newAdmissionId(),
          logical_id: id,
          submission_id: submissionId,
          submitter: ownerOf(principal),
          profile: principal.profile,
          binding: bindingOf(principal, session),
        },
        request_key: `${id}:retry:${params.request_id}`,
        at: this.ctx.now().toISOString(),
      }),
    );
    if (result.kind === 'nothing') {
      throw new GatewayError('not_found', `session ${id} has no user message to retry`, { session_id: id });
    }
    const a = result.admission;
    if (result.kind === 'retried') {
      this.rewound(id, result.rewind);
      this.ctx.events.emit('admission:committed', {
        logical_id: id,
        admission_id: a.admission_id,
        submission_id: submissionId,
      });
      this.ctx.publish(id, {
        type: 'admission.queued',
        admission_id: a.admission_id,
        submission_id: submissionId,
        text: a.text,
      });
    }
    return {
      session_id: id,
      admission_id: a.admission_id,
      submission_id: a.submission_id,
      text: a.text,
      state: a.state,
      seq: a.seq,
      admitted_at: a.admitted_at,
      duplicate: result.kind === 'duplicate',
    };
  }

  /** The session and its validated receipt, if the caller may control it now. */
  private async open(
    principal: Principal,
    logicalId: string,
  ): Promise<{ session: AccessRow; receipt: CreationReceipt }> {
    this.ctx.assertAccepting();
    const session = await this.ctx.access(principal, logicalId);
    refusePaused(session);
    const receipt = this.ctx.receipt(session.logical_id);
    if (!receipt) throw new Error(`session ${logicalId} has no validated receipt`);
    return { session, receipt };
  }

  private async inSlot<T>(
    logicalId: string,
    fn: () => Promise<T>,
    repeat = 'then repeat with the same request_id',
  ): Promise<T> {
    const ran = await this.ctx.scheduler.control(logicalId, fn);
    if (ran.kind === 'elsewhere') throw elsewhereBusy(logicalId);
    if (ran.kind === 'busy') {
      throw new GatewayError(
        'session_busy',
        `a turn of session ${logicalId} is running: wait until it settles (or interrupt it), ${repeat}`,
        { session_id: logicalId, running: this.ctx.scheduler.running(logicalId) },
      );
    }
    return ran.value;
  }

  private rewound(logicalId: string, undone: { turns_undone: number; rewound_count: number }): void {
    this.ctx.publish(logicalId, {
      type: 'transcript.rewound',
      turns_undone: undone.turns_undone,
      rewound_count: undone.rewound_count,
    });
    const current = this.ctx.receipt(logicalId)?.current_session_id ?? logicalId;
    this.ctx.events.emit('transcript:replaced', {
      logical_id: logicalId,
      kind: 'rewind',
      session_id: current,
    });
  }
}
