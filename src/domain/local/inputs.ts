/**
 * The input operations on local sessions: durable admission (LOC-8), cancelling a queued admission,
 * interrupting the running turn (LOC-12), resolving an `unknown` admission (REC-2) and answering
 * approval and clarify prompts by exact id (LOC-9). LocalSessions owns the sessions and their hubs;
 * these operations reach them through the context it gives.
 */
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import { auditRowFor, type AuditDraft } from '../ports/access-store.js';
import type { AdmissionMode, LocalSessionStore } from '../ports/local-store.js';
import { answerer, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import { isOwner, ownerOf, type AccessRow } from './access.js';
import { newAdmissionId, submissionDigest } from './admission.js';
import type { PublicEvent } from './hub.js';
import type { TurnScheduler } from './scheduler.js';
import type { LocalEvents } from './events.js';
import { promptAnswerResult } from './views.js';
import { titleFromMessage } from './titles.js';

export interface InputContext {
  store: LocalSessionStore;
  prompts: PromptBroker;
  scheduler: TurnScheduler;
  events: TypedEmitter<LocalEvents>;
  /** The session if the principal may use it (receipt validated), or a clear refusal. */
  access(principal: Principal, logicalId: string): Promise<AccessRow>;
  publish(logicalId: string, event: PublicEvent): void;
  /** True when the session's receipt is valid in this epoch (it may run). */
  ensureReceipt(logicalId: string): Promise<boolean>;
  /** Titles an untitled session from its first message (titles.ts). */
  /** The session took a title from its first message (stored with the admission). */
  titled(logicalId: string, title: string): void;
  /** Throws budget_paused while the session's budget pause holds (budgets.ts refuseWhileHeld). */
  refuseWhileBudgetHeld(principal: Principal, logicalId: string, text: string): Promise<void>;
  /** Throws runtime_draining while the daemon drains. */
  assertAccepting(): void;
  /** Named test-only fault points; inert in production. */
  fault(point: string): void;
}

/**
 * AUTH-5: a submission by someone other than the owner carries a private binding for execution and
 * recovery; it is stored with the admission and never shown to clients or models.
 */
export function bindingOf(principal: Principal, session: AccessRow): string | null {
  return isOwner(principal, session)
    ? null
    : JSON.stringify({
        profile: principal.profile,
        session_id: session.logical_id,
        principal: ownerOf(principal),
      });
}

/** A session whose receipt did not validate takes no input and no control. */
export function refusePaused(session: AccessRow): void {
  if (session.paused_reason) {
    throw new GatewayError(
      'permission_denied',
      `session ${session.logical_id} is paused: ${session.paused_reason}`,
      {
        session_id: session.logical_id,
      },
    );
  }
}

export class SessionInputs {
  constructor(private readonly ctx: InputContext) {}

  async submit(
    principal: Principal,
    params: {
      session_id: string;
      submission_id: string;
      text: string;
      /**
       * What a retry under the same submission_id is compared by; absent: the text's digest. A
       * surface whose request is more than the text (the OpenAI-compatible endpoint) digests all of it.
       */
      digest?: string;
      /**
       * `steer` (session.steer, issue 28): a correction of the running turn, applied before its next
       * model call; when the turn ends first (or none runs) it is the next turn's input.
       */
      mode?: AdmissionMode;
    },
    /** The call's audit row, committed with the admission (issue 30). */
    audit?: AuditDraft,
  ): Promise<Record<string, unknown>> {
    const mode = params.mode ?? 'prompt';
    this.ctx.assertAccepting();
    const session = await this.ctx.access(principal, params.session_id);
    refusePaused(session);
    await this.ctx.refuseWhileBudgetHeld(principal, session.logical_id, params.text);
    const binding = bindingOf(principal, session);
    const title = session.title === null ? titleFromMessage(params.text) : null;
    const result = await this.ctx.store.admit({
      admission_id: newAdmissionId(),
      logical_id: session.logical_id,
      submission_id: params.submission_id,
      submitter: ownerOf(principal),
      profile: principal.profile,
      // A steer's digest differs from a prompt's of the same text: one submission_id is one request.
      digest: params.digest ?? submissionDigest(mode === 'steer' ? `steer\u0000${params.text}` : params.text),
      text: params.text,
      binding,
      title,
      mode,
      audit: auditRowFor(audit, session.logical_id),
    });
    if (audit && (result.kind === 'admitted' || result.kind === 'existing')) audit.recorded = true;
    this.ctx.fault('admission.committed');
    switch (result.kind) {
      case 'unknown_session':
        throw new GatewayError('not_found', `no session ${params.session_id}`);
      case 'conflict':
        throw new GatewayError(
          'admission_conflict',
          `submission_id ${JSON.stringify(params.submission_id)} was already used with a different text`,
          { submission_id: params.submission_id, admission_id: result.admission.admission_id },
        );
      case 'admitted':
        this.ctx.events.emit('admission:committed', {
          logical_id: session.logical_id,
          admission_id: result.admission.admission_id,
          submission_id: params.submission_id,
        });
        this.ctx.publish(session.logical_id, {
          type: 'admission.queued',
          admission_id: result.admission.admission_id,
          submission_id: params.submission_id,
          text: params.text,
          ...(mode === 'steer' ? { mode } : {}),
        });
        // After this call's receipt is on its way: a claim commits at once when no flush is in
        // flight, and would otherwise hold the receipt back by its whole commit.
        setImmediate(() => this.ctx.scheduler.kick(session.logical_id));
        if (result.titled && title !== null) this.ctx.titled(session.logical_id, title);
        break;
      case 'existing':
        break;
    }
    const a = result.admission;
    return {
      session_id: session.logical_id,
      admission_id: a.admission_id,
      submission_id: a.submission_id,
      state: a.state,
      seq: a.seq,
      admitted_at: a.admitted_at,
      duplicate: result.kind === 'existing',
      ...(a.mode === 'steer' ? { mode: a.mode, applied_to: a.applied_to } : {}),
    };
  }

  async cancel(
    principal: Principal,
    logicalId: string,
    admissionId: string,
  ): Promise<Record<string, unknown>> {
    await this.ctx.access(principal, logicalId);
    const admission = await this.ctx.store.getAdmission(admissionId);
    if (admission?.logical_id !== logicalId) {
      throw new GatewayError('not_found', `no admission ${admissionId} in session ${logicalId}`);
    }
    const cancelled = await this.ctx.store.cancelQueued(admissionId);
    if (cancelled) {
      this.ctx.publish(logicalId, {
        type: 'admission.settled',
        admission_id: admissionId,
        outcome: 'cancelled',
      });
      this.ctx.scheduler.kick(logicalId);
    }
    return { cancelled, state: (await this.ctx.store.getAdmission(admissionId))?.state };
  }

  async interrupt(
    principal: Principal,
    logicalId: string,
    generation: number,
  ): Promise<Record<string, unknown>> {
    await this.ctx.access(principal, logicalId);
    const result = this.ctx.scheduler.interrupt(logicalId, generation);
    if (result === 'stale_generation') {
      throw new GatewayError(
        'stale_generation',
        `execution_generation ${generation} is not the running turn`,
        {
          running: this.ctx.scheduler.running(logicalId),
        },
      );
    }
    return { interrupted: result === 'interrupted' };
  }

  async resolveUnknown(principal: Principal, logicalId: string, admissionId: string, generation: number) {
    await this.ctx.access(principal, logicalId);
    const admission = await this.ctx.store.getAdmission(admissionId);
    // A retry after a lost acknowledgement finds its own resolution: the same answer, nothing changes.
    if (
      admission?.logical_id === logicalId &&
      admission.state === 'interrupted' &&
      admission.generation === generation &&
      admission.detail?.startsWith('resolved by ')
    ) {
      return { resolved: true, outcome: 'interrupted', duplicate: true };
    }
    if (admission?.logical_id !== logicalId || admission.state !== 'unknown') {
      throw new GatewayError('not_found', `no unknown admission ${admissionId} in session ${logicalId}`);
    }
    if (admission.generation !== generation) {
      throw new GatewayError(
        'stale_generation',
        `admission ${admissionId} ran as generation ${admission.generation}`,
      );
    }
    const resolved = await this.ctx.store.resolveUnknown(
      admissionId,
      generation,
      `resolved by ${principal.subject}`,
    );
    if (resolved) {
      this.ctx.publish(logicalId, {
        type: 'admission.settled',
        admission_id: admissionId,
        outcome: 'interrupted',
      });
      if (await this.ctx.ensureReceipt(logicalId)) this.ctx.scheduler.kick(logicalId);
    }
    return { resolved, outcome: 'interrupted', duplicate: false };
  }

  async respondApproval(
    principal: Principal,
    params: { session_id: string; execution_generation: number; prompt_id: string; choice: string },
  ): Promise<Record<string, unknown>> {
    await this.ctx.access(principal, params.session_id);
    return promptAnswerResult(
      this.ctx.prompts.respondApproval({ ...params, answered_by: answerer(principal) }).status,
      params,
    );
  }

  async respondClarify(
    principal: Principal,
    params: {
      session_id: string;
      execution_generation: number;
      prompt_id: string;
      answer: string | string[];
    },
  ): Promise<Record<string, unknown>> {
    await this.ctx.access(principal, params.session_id);
    return promptAnswerResult(
      this.ctx.prompts.respondClarify({ ...params, answered_by: answerer(principal) }).status,
      params,
    );
  }
}
