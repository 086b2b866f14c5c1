/**
 * The controls of a running turn — approval and clarify answers, interrupts — and the open prompts a
 * snapshot shows, wherever in a cluster the turn runs (issue 14, docs/cluster.md "Controls on any
 * instance"). Without a relay (one instance) each is the local call of inputs.ts; with one, the
 * caller is authorized here and the call runs here or on the lease owner (domain/cluster/relay.ts),
 * where `run` performs the very same local call.
 */
import type { ApprovalResponse, ClarifyResponse, PromptBroker } from '../../runtime/approvals/broker.js';
import type { Principal } from '../auth/principal.js';
import { PROMPTS_TIMEOUT_MS, type ControlRelay, type RelayedKind } from '../cluster/relay.js';
import { GatewayError } from '../errors.js';
import type { SessionInputs } from './inputs.js';

export interface RelayedControlsContext {
  relay: ControlRelay | null;
  inputs: SessionInputs;
  prompts: PromptBroker;
  /** The session if the principal may use it, or a clear refusal. */
  access(principal: Principal, logicalId: string): Promise<unknown>;
  /** Whether a turn of the session runs on this instance now. */
  runsHere(logicalId: string): boolean;
  onError(error: unknown, context: string): void;
}

type Result = Record<string, unknown>;

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

  /** The caller is authorized here with its own principal; the owner checks the same principal again. */
  private async routed(
    principal: Principal,
    kind: RelayedKind,
    logicalId: string,
    params: Record<string, unknown>,
    local: () => Promise<Result>,
  ): Promise<Result> {
    const { relay } = this.ctx;
    if (!relay) return local();
    await this.ctx.access(principal, logicalId);
    const route = await relay.route(logicalId, this.ctx.runsHere(logicalId));
    if (route.kind === 'local') return local();
    return (await relay.forward(route.owner, kind, logicalId, principal, params)) as Result;
  }
}
