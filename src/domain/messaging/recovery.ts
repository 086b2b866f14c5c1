/**
 * Messaging restart recovery (SPEC REC-4, REC-5) as a pure decision. Storage gathers the facts
 * (the clean-shutdown marker, the in-flight turn markers, whether each marked turn's reply was
 * persisted, the restart streaks), this decides, and storage applies the plan in one transaction.
 *
 * The only evidence of an interrupted turn is its in-flight marker. A chat that was merely active
 * shortly before the crash finished its turn (its marker is gone), so it is never answered twice.
 */

/** A turn marker as recovery reads it. Times are epoch seconds: a TZ change cannot move them. */
export interface MarkerFact {
  readonly session_key: string;
  readonly started_at_epoch: number;
  /** The turn's reply reached the ledger or the transcript before the process died. */
  readonly replyPersisted: boolean;
  /**
   * The key no longer points at the marker's session (a /new or /reset, a /resume, a prune came
   * after the turn started): the turn belonged to a conversation that is gone and is never
   * resumed into the new one (LIN-2: an interrupted turn is not replayed).
   */
  readonly moved?: boolean;
}

export interface RecoveryFacts {
  readonly cleanShutdown: boolean;
  readonly nowEpoch: number;
  /** Markers older than this are orphans from long ago, dropped without resuming. */
  readonly maxAgeSeconds: number;
  /**
   * `recovery.auto_continue_freshness_s`: a turn that started longer ago than this is not
   * continued (REC-4); its chat is told instead (STALE_NOTICE). Absent: no limit.
   */
  readonly freshnessSeconds?: number;
  readonly markers: readonly MarkerFact[];
  /** Consecutive unclean restarts that found each key mid-turn, before this one. */
  readonly streaks: ReadonlyMap<string, number>;
  /** REC-5: suspend at this many consecutive restarts. */
  readonly stuckAfter: number;
}

export interface RecoveryPlan {
  /** Keys to mark resume_pending (restart_interrupted) and auto-continue once. */
  readonly resume: readonly string[];
  /** Keys active across too many restarts: suspended, the user starts fresh. */
  readonly suspend: readonly string[];
  /** Keys whose persisted reply the ledger sweep delivers: no resume, no regeneration. */
  readonly settled: readonly string[];
  /** Turns too old to continue (freshnessSeconds): not resumed, their chat is told once. */
  readonly stale: readonly MarkerFact[];
  /** The streak table after this start. */
  readonly streaks: ReadonlyMap<string, number>;
}

export const STUCK_LOOP_RESTARTS = 3;

/**
 * Ledger rows whose turn id starts with this are the gateway's own notices, not a model's replies:
 * they are sent as written, never with the "Recovered reply" heading.
 */
export const NOTICE_PREFIX = 'notice:';

export function isGatewayNotice(turnId: string): boolean {
  return turnId.startsWith(NOTICE_PREFIX);
}

/**
 * What a chat is told when its conversation was suspended by stuck-loop detection (REC-5), at the
 * `restarts`-th consecutive restart that found it mid-turn (`recovery.max_resumes`).
 */
export function suspendedNotice(restarts: number): string {
  const why =
    restarts === 1
      ? 'a restart of the gateway, and this gateway continues no interrupted request'
      : `${restarts} restarts of the gateway in a row, so it may be what keeps stopping it`;
  return (
    `Your last message was interrupted by ${why}: that conversation was closed and will not be ` +
    'continued. Your next message starts a new one.'
  );
}

/** The notice at the default count. */
export const SUSPENDED_NOTICE = suspendedNotice(STUCK_LOOP_RESTARTS);

/**
 * What a chat is told when the turn a crash interrupted started longer ago than
 * `recovery.auto_continue_freshness_s`: it is not continued, and the conversation goes on.
 */
export const STALE_NOTICE =
  'The gateway restarted while it was answering your earlier message, and that request is now too ' +
  'old to continue, so it was not continued. Send it again if you still need it; your next message ' +
  'carries on the conversation.';

export function planRecovery(facts: RecoveryFacts): RecoveryPlan {
  // A clean stop drained every turn: leftover markers are orphans and nothing is stuck.
  if (facts.cleanShutdown) return { resume: [], suspend: [], settled: [], stale: [], streaks: new Map() };
  const resume: string[] = [];
  const suspend: string[] = [];
  const settled: string[] = [];
  const stale: MarkerFact[] = [];
  const streaks = new Map<string, number>();
  const oldest = facts.nowEpoch - facts.maxAgeSeconds;
  const freshest = facts.freshnessSeconds === undefined ? null : facts.nowEpoch - facts.freshnessSeconds;
  for (const marker of facts.markers) {
    if (marker.replyPersisted) {
      settled.push(marker.session_key);
      continue;
    }
    if (marker.moved === true) continue;
    const streak = (facts.streaks.get(marker.session_key) ?? 0) + 1;
    if (streak >= facts.stuckAfter) {
      suspend.push(marker.session_key);
    } else if (marker.started_at_epoch < oldest) {
      // An orphan from long ago: dropped without a word, as before.
    } else if (freshest !== null && marker.started_at_epoch < freshest) {
      stale.push(marker);
    } else {
      resume.push(marker.session_key);
      streaks.set(marker.session_key, streak);
    }
  }
  return { resume, suspend, settled, stale, streaks };
}

/** Replies made only of a silence token deliver nothing (REC-4, and the normal path alike). */
const SILENCE_TOKENS = new Set(['[SILENT]', 'NO_REPLY']);

export function isSilentReply(text: string | null): boolean {
  if (text === null) return true;
  const trimmed = text.trim();
  return trimmed === '' || SILENCE_TOKENS.has(trimmed);
}

/** The notice a reply delivered by startup recovery carries, so the user knows why it is late. */
export function recoveredReplyText(text: string): string {
  return `Recovered reply (the gateway restarted before it could be sent):\n\n${text}`;
}
