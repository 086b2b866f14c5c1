/**
 * The controls of a session wherever in a cluster it runs (issue 14, docs/cluster.md "Controls on
 * any instance"): those of a running turn — approval and clarify answers, interrupts — and the open
 * prompts a snapshot shows, which go where the turn runs; and the session controls — reset, undo,
 * retry, compress, model, checkpoint restore — which go where the session's lease is. Without a relay (one
 * instance) each is the local call; with one, the caller is authorized here and the call runs here
 * or on the lease owner (domain/cluster/relay.ts), where `run` performs the very same local call.
 */
import type { ApprovalResponse, ClarifyResponse, PromptBroker } from '../../runtime/approvals/broker.js';
import type { Principal } from '../auth/principal.js';
import type { AuditDraft, AuditEntry } from '../ports/access-store.js';
import { PROMPTS_TIMEOUT_MS, type ControlRelay, type RelayedKind } from '../cluster/relay.js';
import { GatewayError } from '../errors.js';
import type { SessionInputs } from './inputs.js';

type Result = Record<string, unknown>;

export interface ResetParams {
  session_id: string;
  request_id: string;
}
export interface UndoParams extends ResetParams {
  turns: number;
}
export interface CompressParams {
  session_id: string;
  execution_generation?: number | undefined;
}
export interface ModelParams {
  session_id: string;
  provider?: string | undefined;
  model: string;
}
export interface RestoreParams {
  session_id: string;
  checkpoint: number;
}

/** The local calls of the session controls (controls.ts, compress-control.ts, rollback.ts). */
export interface SessionControlCalls {
  reset(principal: Principal, params: ResetParams, audit?: AuditDraft): Promise<Result>;
  undo(principal: Principal, params: UndoParams): Promise<Result>;
  retry(principal: Principal, params: ResetParams): Promise<Result>;
  compress(principal: Principal, params: CompressParams): Promise<Result>;
  restore(principal: Principal, params: RestoreParams): Promise<Result>;
  model(principal: Principal, params: ModelParams): Promise<Result>;
}

export interface RelayedControlsContext {
  relay: ControlRelay | null;
  inputs: SessionInputs;
  prompts: PromptBroker;
  session: SessionControlCalls;
  /** The session if the principal may use it, or a clear refusal. */
  access(principal: Principal, logicalId: string): Promise<unknown>;
  /** Whether a turn of the session runs on this instance now. */
  runsHere(logicalId: string): boolean;
  /** Whether this instance holds the session's lease now (a session control runs here then). */
  holdsLease(logicalId: string): boolean;
  onError(error: unknown, context: string): void;
}

/**
 * How often a session control is routed before its refusal stands: the lease may move between the
 * route and the call (taken by another instance, or given back by the owner), and the control,
 * refused with `held_elsewhere` before it ran anything, is routed again.
 */
const SESSION_ROUTES = 3;

const heldElsewhere = (error: unknown): boolean =>
  error instanceof GatewayError &&
  error.reason === 'session_busy' &&
  error.details?.['held_elsewhere'] === true;

export class RelayedControls {
  constructor(private readonly ctx: RelayedControlsContext) {}

  respondApproval(principal: Principal, params: ApprovalResponse): Promise<Result> {
    return this.routed(principal, 'approval.respond', params.session_id, { ...params }, () =>
      this.ctx.inputs.respondApproval(principal, params),
    );
  }

  respondClarify(principal: Principal, params: ClarifyResponse): Promise<Result> {
    return this.routed(principal, 'clarify.respond', params.session_id, { ...params }, () =>
      this.ctx.inputs.respondClarify(principal, params),
    );
  }

  interrupt(principal: Principal, logicalId: string, generation: number): Promise<Result> {
    const params = { session_id: logicalId, execution_generation: generation };
    return this.routed(principal, 'session.interrupt', logicalId, params, () =>
      this.ctx.inputs.interrupt(principal, logicalId, generation),
    );
  }

  /**
   * `audit`: the call's row, committed with the reset wherever it runs: here, or on the lease owner,
   * which the relay carries it to (as `audit` beside the params). Answered, it is recorded either way.
   */
  async reset(principal: Principal, params: ResetParams, audit?: AuditDraft): Promise<Result> {
    const relayed = audit ? { ...params, audit: audit.entry } : { ...params };
    const result = await this.leased(principal, 'session.reset', params.session_id, relayed, () =>
      this.ctx.session.reset(principal, params, audit),
    );
    if (audit) audit.recorded = true;
    return result;
  }

  undo(principal: Principal, params: UndoParams): Promise<Result> {
    return this.leased(principal, 'session.undo', params.session_id, { ...params }, () =>
      this.ctx.session.undo(principal, params),
    );
  }

  retry(principal: Principal, params: ResetParams): Promise<Result> {
    return this.leased(principal, 'session.retry', params.session_id, { ...params }, () =>
      this.ctx.session.retry(principal, params),
    );
  }

  compress(principal: Principal, params: CompressParams): Promise<Result> {
    return this.leased(principal, 'session.compress', params.session_id, { ...params }, () =>
      this.ctx.session.compress(principal, params),
    );
  }

  model(principal: Principal, params: ModelParams): Promise<Result> {
    return this.leased(principal, 'session.model', params.session_id, { ...params }, () =>
      this.ctx.session.model(principal, params),
    );
  }

  restore(principal: Principal, params: RestoreParams): Promise<Result> {
    return this.leased(principal, 'checkpoint.restore', params.session_id, { ...params }, () =>
      this.ctx.session.restore(principal, params),
    );
  }

  /** The owner's side: a relayed call, run exactly as the local call (never relayed again). */
  async run(
    kind: RelayedKind,
    principal: Principal | null,
    params: Record<string, unknown>,
  ): Promise<unknown> {
    const sessionId = String(params['session_id']);
    if (kind === 'session.prompts') return this.ctx.prompts.pendingPrompts(sessionId);
    if (!principal) throw new GatewayError('permission_denied', 'a relayed control carries no principal');
    switch (kind) {
      case 'approval.respond':
        return this.ctx.inputs.respondApproval(principal, params as unknown as ApprovalResponse);
      case 'clarify.respond':
        return this.ctx.inputs.respondClarify(principal, params as unknown as ClarifyResponse);
      case 'session.interrupt':
        return this.ctx.inputs.interrupt(principal, sessionId, Number(params['execution_generation']));
      case 'session.reset': {
        // The sender's audit row, committed here with the reset (issue 30).
        const { audit, ...reset } = params;
        const draft = audit ? { entry: audit as AuditEntry, recorded: false } : undefined;
        return this.ctx.session.reset(principal, reset as unknown as ResetParams, draft);
      }
      case 'session.undo':
        return this.ctx.session.undo(principal, params as unknown as UndoParams);
      case 'session.retry':
        return this.ctx.session.retry(principal, params as unknown as ResetParams);
      case 'session.compress':
        return this.ctx.session.compress(principal, params as unknown as CompressParams);
      case 'session.model':
        return this.ctx.session.model(principal, params as unknown as ModelParams);
      case 'checkpoint.restore':
        return this.ctx.session.restore(principal, params as unknown as RestoreParams);
    }
  }

  /**
   * The open prompts of a session for a snapshot: this instance's, or (when another instance runs
   * the turn) the owner's. An owner that does not answer leaves the list as it is here (empty); the
   * prompts' events still reach the viewer through the shared stream.
   */
  async pendingPrompts(logicalId: string): Promise<unknown[]> {
    const { relay, prompts } = this.ctx;
    const here = prompts.pendingPrompts(logicalId);
    if (!relay || this.ctx.runsHere(logicalId)) return here;
    try {
      const route = await relay.route(logicalId, false);
      if (route.kind === 'local') return here;
      const owners = relay.forward(
        route.owner,
        'session.prompts',
        logicalId,
        null,
        {
          session_id: logicalId,
        },
        PROMPTS_TIMEOUT_MS,
      );
      return (await owners) as unknown[];
    } catch (error) {
      this.ctx.onError(error, `reading the open prompts of session ${logicalId} from its owner`);
      return here;
    }
  }

  /**
   * A control of the running turn: here when the turn runs here (or nobody holds the lease). The
   * caller is authorized here with its own principal; the owner checks the same principal again.
   */
  private routed(
    principal: Principal,
    kind: RelayedKind,
    logicalId: string,
    params: Record<string, unknown>,
    local: () => Promise<Result>,
  ): Promise<Result> {
    return this.via(principal, kind, logicalId, params, () => this.ctx.runsHere(logicalId), local, 1);
  }

  /**
   * A session control: here when this instance holds the session's lease, or nobody does (the
   * local call takes it); on the owner otherwise. Routed again when the lease moved meanwhile.
   */
  private leased(
    principal: Principal,
    kind: RelayedKind,
    logicalId: string,
    params: Record<string, unknown>,
    local: () => Promise<Result>,
  ): Promise<Result> {
    const here = () => this.ctx.holdsLease(logicalId);
    return this.via(principal, kind, logicalId, params, here, local, SESSION_ROUTES);
  }

  private async via(
    principal: Principal,
    kind: RelayedKind,
    logicalId: string,
    params: Record<string, unknown>,
    here: () => boolean,
    local: () => Promise<Result>,
    routes: number,
  ): Promise<Result> {
    const { relay } = this.ctx;
    if (!relay) return local();
    await this.ctx.access(principal, logicalId);
    for (let attempt = 1; ; attempt++) {
      const route = await relay.route(logicalId, here());
      try {
        if (route.kind === 'local') return await local();
        return (await relay.forward(route.owner, kind, logicalId, principal, params)) as Result;
      } catch (error) {
        if (attempt >= routes || !heldElsewhere(error)) throw error;
      }
    }
  }
}
