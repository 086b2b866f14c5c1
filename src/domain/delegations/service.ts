/**
 * The delegation.* operations (issue 28, docs/scheduling.md "Background delegations"): start, list,
 * stop and keep, each checked against the caller, and what a parent's reset or deletion does to its
 * delegations. The RPC methods, the `delegate` tool, the chat's /delegations and the CLI come here.
 */
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { LaunchPolicy } from '../local/launch-policy.js';
import type { DelegationRow, DelegationStore } from '../ports/delegation-store.js';
import { encodeOwner, mayManage, newDelegationId, viewOf, type DelegationView } from './delegation.js';
import { childLaunch, type ChildRequest } from './policy.js';
import type { DelegationRunner } from './runner.js';

export interface DelegationLimits {
  /** delegations.max_depth: a child of a child of … at most this deep. */
  maxDepth: number;
  /** delegations.max_per_session: delegations of one session not yet ended. */
  maxPerSession: number;
}

export interface StartDelegationParams {
  session_id: string;
  request_id: string;
  task: string;
  child?: ChildRequest | undefined;
}

export interface DelegationServiceOptions {
  store: DelegationStore;
  profile: string;
  runner: DelegationRunner;
  limits: DelegationLimits;
  now(): Date;
  /** The parent's frozen launch policy; throws unless the principal may submit to the session. */
  parentPolicy(principal: Principal, sessionId: string): Promise<LaunchPolicy>;
  /** Throws unless the principal may read the session. */
  checkRead(principal: Principal, sessionId: string): Promise<void>;
  /** The profile's MCP servers enabled now, by name. */
  profileMcp(): readonly string[];
}

export class DelegationService {
  constructor(private readonly options: DelegationServiceOptions) {}

  /**
   * Starts a delegation of `session_id`: refused (changing nothing) when the child would be wider
   * than its parent or a limit is reached; a repeat of the request id answers the same delegation.
   * Resolves once its child exists and its task is admitted (or, when that must wait, once recorded).
   */
  async start(
    principal: Principal,
    params: StartDelegationParams,
  ): Promise<{ delegation: DelegationView; duplicate: boolean }> {
    const { store, limits } = this.options;
    if (!principal.capabilities.includes('session:create'))
      throw new GatewayError('permission_denied', 'a delegation creates a session: it needs session:create');
    const parent = await this.options.parentPolicy(principal, params.session_id);
    const siblings = await store.listDelegations(this.options.profile, params.session_id);
    const earlier = siblings.find((d) => d.request_id === params.request_id);
    if (earlier) return this.answer(principal, earlier, true);
    const above = await store.delegationOfChild(params.session_id);
    const depth = (above?.depth ?? 0) + 1;
    if (depth > limits.maxDepth) {
      throw new GatewayError(
        'delegation_limit',
        `session ${params.session_id} is itself a delegation ${depth - 1} deep: delegations.max_depth (${limits.maxDepth}) allows no deeper one`,
        { limit: 'max_depth', max: limits.maxDepth },
      );
    }
    const open = siblings.filter((d) => d.state === 'starting' || d.state === 'running');
    if (open.length >= limits.maxPerSession) {
      throw new GatewayError(
        'delegation_limit',
        `session ${params.session_id} has ${open.length} delegations going: delegations.max_per_session (${limits.maxPerSession}) allows no more; stop one (delegation.stop) or wait for one to end`,
        { limit: 'max_per_session', max: limits.maxPerSession },
      );
    }
    const launch = childLaunch(parent, params.child ?? {}, params.task, this.options.profileMcp());
    const row: DelegationRow = {
      delegation_id: newDelegationId(),
      profile: this.options.profile,
      parent_id: params.session_id,
      request_id: params.request_id,
      owner: encodeOwner(principal),
      task: params.task,
      launch: JSON.stringify(launch),
      depth,
      state: 'starting',
      child_id: null,
      child_admission_id: null,
      outcome: null,
      detail: null,
      result_admission_id: null,
      kept: false,
      created_at: this.options.now().toISOString(),
      ended_at: null,
    };
    const added = await store.addDelegation(row);
    if (added.kind === 'existing') return this.answer(principal, added.delegation, true);
    await this.options.runner.step(row.delegation_id);
    return this.answer(principal, row, false);
  }

  private async answer(
    principal: Principal,
    row: DelegationRow,
    duplicate: boolean,
  ): Promise<{ delegation: DelegationView; duplicate: boolean }> {
    if (!mayManage(principal, row)) {
      throw new GatewayError('invalid_params', `request_id ${row.request_id} was used by another caller`, {
        field: 'request_id',
      });
    }
    const fresh = (await this.options.store.getDelegation(row.delegation_id)) ?? row;
    return { delegation: viewOf(fresh), duplicate };
  }

  /** The delegations the caller may manage, of one session when given (the caller must reach it). */
  async list(principal: Principal, sessionId: string | null): Promise<{ delegations: DelegationView[] }> {
    if (sessionId !== null) await this.options.checkRead(principal, sessionId);
    const rows = await this.options.store.listDelegations(this.options.profile, sessionId);
    return { delegations: rows.filter((row) => mayManage(principal, row)).map(viewOf) };
  }

  /** Stops the delegation: its child's task is cancelled or interrupted, and nothing is reported. */
  async stop(
    principal: Principal,
    delegationId: string,
  ): Promise<{ delegation: DelegationView; stopped: boolean }> {
    await this.managed(principal, delegationId);
    const stopped = await this.options.runner.stopOne(delegationId, `stopped by ${principal.subject}`);
    return { delegation: viewOf((await this.options.store.getDelegation(delegationId))!), stopped };
  }

  /** Keeps the delegation through a reset of its parent (QUE-2), or (kept false) no longer. */
  async keep(
    principal: Principal,
    delegationId: string,
    kept: boolean,
  ): Promise<{ delegation: DelegationView }> {
    await this.managed(principal, delegationId);
    await this.options.store.setKept(delegationId, kept);
    return { delegation: viewOf((await this.options.store.getDelegation(delegationId))!) };
  }

  /** QUE-2: a reset (`/new`, `/reset`) stops the parent's delegations, all but the kept ones. */
  async parentReset(parentId: string): Promise<string[]> {
    return this.stopChildrenOf(parentId, (row) => !row.kept, 'its parent session was reset');
  }

  /** A deleted parent has nowhere to take a result: every delegation of it stops, kept or not. */
  async parentDeleted(parentId: string): Promise<string[]> {
    return this.stopChildrenOf(parentId, () => true, 'its parent session was deleted');
  }

  private async stopChildrenOf(
    parentId: string,
    which: (row: DelegationRow) => boolean,
    detail: string,
  ): Promise<string[]> {
    const rows = await this.options.store.listDelegations(this.options.profile, parentId);
    const stopped: string[] = [];
    for (const row of rows) {
      if ((row.state === 'starting' || row.state === 'running') && which(row)) {
        if (await this.options.runner.stopOne(row.delegation_id, detail)) stopped.push(row.delegation_id);
      }
    }
    return stopped;
  }

  private async managed(principal: Principal, delegationId: string): Promise<DelegationRow> {
    const row = await this.options.store.getDelegation(delegationId);
    if (row === null || !mayManage(principal, row))
      throw new GatewayError('not_found', `no delegation ${delegationId}`, { delegation_id: delegationId });
    return row;
  }
}
