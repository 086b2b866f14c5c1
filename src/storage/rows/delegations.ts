/** The columns of background delegations (migration 028) and their values in column order, for both backends. */
import type { DelegationRow } from '../../domain/ports/delegation-store.js';

export const DELEGATION_COLUMNS =
  'delegation_id, profile, parent_id, request_id, owner, task, launch, depth, state, child_id, child_admission_id, outcome, detail, result_admission_id, kept, created_at, ended_at';

export function delegationValues(d: DelegationRow): unknown[] {
  return [
    d.delegation_id,
    d.profile,
    d.parent_id,
    d.request_id,
    d.owner,
    d.task,
    d.launch,
    d.depth,
    d.state,
    d.child_id,
    d.child_admission_id,
    d.outcome,
    d.detail,
    d.result_admission_id,
    d.kept ? 1 : 0,
    d.created_at,
    d.ended_at,
  ];
}

/** A row as either driver returns it (kept is an integer in both), as the domain reads it. */
export function readDelegationRow(raw: Record<string, unknown>): DelegationRow {
  return { ...(raw as unknown as DelegationRow), depth: Number(raw.depth), kept: Number(raw.kept) === 1 };
}
