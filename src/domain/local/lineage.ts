/**
 * LIN-3: a receipt's lineage is believed only where the store agrees with every step of it.
 *
 * A local session starts on the physical transcript named like its logical id; each compression or
 * reset moves it to a child transcript, in one transaction that writes the child row (naming its
 * parent and the kind of step), closes or keeps the parent, advances the receipt and the route.
 * Recovery therefore expects, for the chain logical id → … → current:
 *
 * - every transcript of the chain exists and lives on this session's route key (published by this
 *   receipt, not borrowed from another session);
 * - each child names its parent (and the step's kind, where the row records one); the chain's first
 *   transcript has no parent;
 * - a reset step matches the parent's closure: closed for `reset` at the very instant of the step;
 * - each parent has exactly one child, the recorded one (the canonical child), and the current
 *   transcript has none: any other child is a fork, and a fork is never adopted;
 * - the current transcript is open.
 *
 * Anything else fails closed, like any bad receipt: the session pauses, loudly.
 */
import type { CreationReceipt, LineageStep } from './receipt.js';

/** What the store holds about one physical transcript of the chain. */
export interface LineageFacts {
  session_id: string;
  session_key: string;
  closed_at: string | null;
  closed_reason: string | null;
  parent_session_id: string | null;
  lineage_kind: string | null;
  /** Every transcript that names this one as its parent. */
  children: readonly string[];
}

export type LineageFailure = 'broken_lineage' | 'fork';

export type LineageCheck = { ok: true } | { ok: false; failure: LineageFailure; detail: string };

/** The physical transcripts a receipt's lineage names, oldest first (the chain was checked by checkReceipt). */
export function lineageChain(receipt: CreationReceipt): string[] {
  return [receipt.logical_id, ...receipt.lineage.map((step) => step.to)];
}

/** Checks every step of a (well-formed, continuous) lineage against the store's facts. */
export function checkLineage(
  receipt: CreationReceipt,
  facts: ReadonlyMap<string, LineageFacts | null>,
  routeKey: string,
): LineageCheck {
  const chain = lineageChain(receipt);
  for (const id of chain) {
    const row = facts.get(id) ?? null;
    if (row === null) return broken(`transcript ${id} of the lineage does not exist`);
    if (row.session_key !== routeKey) return broken(`transcript ${id} belongs to another session`);
  }
  const first = facts.get(receipt.logical_id)!;
  if (first.parent_session_id !== null) {
    return broken(`the first transcript ${first.session_id} claims a parent ${first.parent_session_id}`);
  }
  for (const step of receipt.lineage) {
    const failed = checkStep(step, facts.get(step.from)!, facts.get(step.to)!);
    if (failed) return failed;
  }
  const current = facts.get(chain[chain.length - 1]!)!;
  if (current.children.length > 0) {
    return {
      ok: false,
      failure: 'fork',
      detail: `the current transcript ${current.session_id} has an unrecorded child ${current.children.join(', ')}`,
    };
  }
  if (current.closed_at !== null) {
    return broken(`the current transcript ${current.session_id} is closed (${current.closed_reason ?? '?'})`);
  }
  return { ok: true };
}

function checkStep(step: LineageStep, parent: LineageFacts, child: LineageFacts): LineageCheck | null {
  // A child row written by code that records only the parent link (lineage_kind null) still counts.
  const kindAgrees = child.lineage_kind === null || child.lineage_kind === step.kind;
  if (child.parent_session_id !== step.from || !kindAgrees) {
    return broken(`${step.kind} child ${step.to} does not link to its parent ${step.from}`);
  }
  const others = parent.children.filter((id) => id !== step.to);
  if (others.length > 0 || !parent.children.includes(step.to)) {
    return {
      ok: false,
      failure: 'fork',
      detail: `transcript ${step.from} has children ${parent.children.join(', ')}; the lineage names only ${step.to}`,
    };
  }
  if (step.kind === 'reset' && (parent.closed_reason !== 'reset' || parent.closed_at !== step.at)) {
    return broken(
      `reset step from ${step.from} at ${step.at} does not match its closure (${parent.closed_reason ?? 'open'} at ${parent.closed_at ?? '-'})`,
    );
  }
  return null;
}

function broken(detail: string): LineageCheck {
  return { ok: false, failure: 'broken_lineage', detail };
}
