/**
 * Exactly-once rendering across reconnects (SPEC UX-1, LOC-11). Two counters decide what the chat
 * prints:
 *
 * - the event cursor (epoch, last seq applied): a notification at or below it is a duplicate, one
 *   right after it is applied, one further ahead means events were missed and must be fetched with
 *   `session.events.since` first; a new epoch means the daemon restarted and its event log is new.
 * - the number of transcript messages already shown: every completed message is either announced
 *   by `message.stored` or listed in a snapshot, in transcript order, so a snapshot is rendered
 *   from that index on and no completed message is shown twice or skipped.
 */

export interface CursorPosition {
  epoch: number;
  lastSeq: number;
}

export type Arrival = 'apply' | 'duplicate' | 'gap' | 'new_epoch';

/** What to do with a sequenced event arriving at `position`. */
export function classifyArrival(position: CursorPosition, epoch: number, seq: number): Arrival {
  if (epoch !== position.epoch) return 'new_epoch';
  if (seq <= position.lastSeq) return 'duplicate';
  return seq === position.lastSeq + 1 ? 'apply' : 'gap';
}

export type ResyncPlan = { kind: 'replay'; epoch: number; afterSeq: number } | { kind: 'snapshot' };

/**
 * After a (re)attach: the same epoch can replay the missed events from the daemon's buffer; a new
 * epoch (the daemon restarted) or no position yet can only be rebuilt from the snapshot.
 */
export function planResync(position: CursorPosition | null, snapshotEpoch: number): ResyncPlan {
  if (position === null || position.epoch !== snapshotEpoch) return { kind: 'snapshot' };
  return { kind: 'replay', epoch: position.epoch, afterSeq: position.lastSeq };
}

/** The snapshot messages not shown yet (transcript order; `shown` already printed). */
export function unseenMessages<T>(messages: readonly T[], shown: number): T[] {
  return shown >= messages.length ? [] : messages.slice(Math.max(0, shown));
}

/** Replayed events in order, without those already applied. */
export function unseenEvents<T extends { seq: number }>(events: readonly T[], afterSeq: number): T[] {
  return events.filter((e) => e.seq > afterSeq).sort((a, b) => a.seq - b.seq);
}

export interface PendingAdmissionView {
  admission_id: string;
  submission_id: string;
  state: string;
  text?: string;
  execution_generation?: number | null;
  /** Why an `unknown` admission was not resumed (tool_running, max_resumes, stale). */
  detail?: string | null;
}

/**
 * Where our own submission stands after a snapshot: still pending (we learn its admission id), lost
 * in a crash (`unknown`: never replayed, so the chat stops waiting), settled while we were away
 * (admitted before and no longer pending), or not admitted yet (resubmit with the same id).
 */
export function submissionAfterSnapshot(
  mine: { submissionId: string; acknowledged: boolean },
  pending: readonly PendingAdmissionView[],
):
  | { kind: 'pending'; admissionId: string }
  | { kind: 'unknown' }
  | { kind: 'settled' }
  | { kind: 'resubmit' } {
  const found = pending.find((a) => a.submission_id === mine.submissionId);
  if (found)
    return found.state === 'unknown'
      ? { kind: 'unknown' }
      : { kind: 'pending', admissionId: found.admission_id };
  return mine.acknowledged ? { kind: 'settled' } : { kind: 'resubmit' };
}
