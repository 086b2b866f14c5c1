/**
 * A background delegation (issue 28, docs/scheduling.md "Background delegations"): a task a session
 * hands to a child session of its own, narrower or equal in power, that runs in the background; its
 * result is admitted into the parent once, waking it. The ids every step uses derive from the
 * delegation id, which is what makes each step safe to repeat after a crash.
 */
import { randomBytes } from 'node:crypto';
import { makePrincipal, type Capability, type Principal, type PrincipalProvider } from '../auth/principal.js';
import type { DelegationRow } from '../ports/delegation-store.js';

export function newDelegationId(): string {
  return `dlg_${randomBytes(6).toString('hex')}`;
}

/** The child session's creation request id: a repeat creates nothing more. */
export function childRequestId(delegationId: string): string {
  return `delegation:${delegationId}`;
}

/** The submission id of the task admitted into the child. */
export function taskSubmissionId(delegationId: string): string {
  return `delegation:${delegationId}:task`;
}

/** The submission id of the result admitted into the parent: once, whatever repeats it. */
export function resultSubmissionId(delegationId: string): string {
  return `delegation:${delegationId}`;
}

/** The request id of a delegation the `delegate` tool starts: its turn's admission and tool call. */
export function toolRequestId(admissionId: string, toolCallId: string): string {
  return `tool:${admissionId}:${toolCallId}`;
}

interface StoredOwner {
  subject: string;
  provider: PrincipalProvider;
  profile: string;
  capabilities: Capability[];
}

export function encodeOwner(principal: Principal): string {
  const owner: StoredOwner = {
    subject: principal.subject,
    provider: principal.provider,
    profile: principal.profile,
    capabilities: [...principal.capabilities],
  };
  return JSON.stringify(owner);
}

/** The principal the child runs as and the result is admitted by: the one who started it. */
export function ownerPrincipal(row: DelegationRow): Principal {
  const o = JSON.parse(row.owner) as StoredOwner;
  return makePrincipal(o.subject, o.provider, o.profile, o.capabilities);
}

/** Whether `principal` may see, stop and keep the delegation: who started it, or an operator of its profile. */
export function mayManage(principal: Principal, row: DelegationRow): boolean {
  if (principal.profile !== row.profile) return false;
  if (principal.capabilities.includes('session:operator')) return true;
  const o = JSON.parse(row.owner) as StoredOwner;
  return o.subject === principal.subject && o.provider === principal.provider;
}

/**
 * The text admitted into the parent when the delegation ends: the outcome, the task, and the child's
 * final answer (or why there is none). The model reads it as a user message of its next turn.
 */
export function resultText(
  row: DelegationRow,
  outcome: string,
  detail: string | null,
  answer: string | null,
): string {
  const head =
    outcome === 'completed'
      ? `Background delegation ${row.delegation_id} completed.`
      : outcome === 'unknown'
        ? `Background delegation ${row.delegation_id} ended unknown: ${detail ?? 'the daemon stopped while its turn ran'}. Whether its last step took effect is not known; its child session ${row.child_id ?? '-'} shows what it did.`
        : `Background delegation ${row.delegation_id} ${outcome}${detail ? `: ${detail}` : ''}.`;
  return [head, `Task: ${row.task}`, ...(answer === null ? [] : ['Result:', answer])].join('\n');
}

/** A delegation as delegation.list shows it. */
export interface DelegationView {
  delegation_id: string;
  parent_session_id: string;
  child_session_id: string | null;
  task: string;
  /** starting · running · reported (its result went to the parent) · stopped. */
  state: DelegationRow['state'];
  outcome: string | null;
  detail: string | null;
  kept: boolean;
  depth: number;
  created_at: string;
  ended_at: string | null;
  child_admission_id: string | null;
  result_admission_id: string | null;
}

export function viewOf(row: DelegationRow): DelegationView {
  return {
    delegation_id: row.delegation_id,
    parent_session_id: row.parent_id,
    child_session_id: row.child_id,
    task: row.task,
    state: row.state,
    outcome: row.outcome,
    detail: row.detail,
    kept: row.kept,
    depth: row.depth,
    created_at: row.created_at,
    ended_at: row.ended_at,
    child_admission_id: row.child_admission_id,
    result_admission_id: row.result_admission_id,
  };
}
