/**
 * The storage contract of background delegations (issue 28, migration 028, docs/scheduling.md
 * "Background delegations"). One row per delegation; its ids are derived from its delegation id
 * (the child's creation request `delegation:<id>`, the task's submission `delegation:<id>:task`, the
 * result's submission into the parent `delegation:<id>`), so every step after the row is written is
 * idempotent, and a crash anywhere repeats only calls that answer what they answered before.
 *
 *   starting ──child created, task admitted──▶ running ──result admitted into the parent──▶ reported
 *       └──────────────────── stop (a user, a parent reset or deletion) ──────────────────▶ stopped
 */

export const DELEGATION_STATES = ['starting', 'running', 'reported', 'stopped'] as const;
export type DelegationState = (typeof DELEGATION_STATES)[number];

export interface DelegationRow {
  delegation_id: string;
  profile: string;
  /** The parent session (logical id): where the result is admitted. */
  parent_id: string;
  /** The caller's request id (delegation.start) or the tool call's: a repeat answers the same row. */
  request_id: string;
  /** The principal the child runs as (JSON): the one who started it. */
  owner: string;
  task: string;
  /** The child's `session.create` parameters (JSON), checked narrower than or equal to the parent's. */
  launch: string;
  /** 1 for a child of a session that is no delegation's child; its own children are depth + 1. */
  depth: number;
  state: DelegationState;
  child_id: string | null;
  child_admission_id: string | null;
  /** How the child's task ended (completed, failed, cancelled, interrupted, unknown), or `stopped`. */
  outcome: string | null;
  detail: string | null;
  /** The admission that carried the result into the parent; null until reported. */
  result_admission_id: string | null;
  /** Kept (QUE-2): a parent reset does not stop it. */
  kept: boolean;
  created_at: string;
  ended_at: string | null;
}

export type AddDelegationResult = { kind: 'added' | 'existing'; delegation: DelegationRow };

export interface DelegationStore {
  /** Adds the row, or answers the row an earlier call with the same (parent, request_id) added. */
  addDelegation(row: DelegationRow): Promise<AddDelegationResult>;
  getDelegation(delegationId: string): Promise<DelegationRow | null>;
  /** The profile's delegations (of one parent when given), oldest first. */
  listDelegations(profile: string, parentId: string | null): Promise<DelegationRow[]>;
  /** Delegations still `starting` or `running`, of every parent of the profile. */
  openDelegations(profile: string): Promise<DelegationRow[]>;
  /** The delegation whose child is this session, or null: how deep the session is. */
  delegationOfChild(childId: string): Promise<DelegationRow | null>;
  /** starting → running, with the child and its task's admission. */
  markRunning(delegationId: string, childId: string, admissionId: string): Promise<void>;
  /** starting|running → reported; false (nothing changed) when it had already ended. */
  markReported(
    delegationId: string,
    outcome: string,
    detail: string | null,
    resultAdmissionId: string | null,
    at: string,
  ): Promise<boolean>;
  /** starting|running → stopped; false (nothing changed) when it had already ended. */
  markStopped(delegationId: string, detail: string, at: string): Promise<boolean>;
  setKept(delegationId: string, kept: boolean): Promise<void>;
}
