/**
 * The session store contract (SPEC STO-2), independent of the database behind it. SQLite implements
 * it now (storage/sqlite); PostgreSQL will later, and both must pass test/shared/session-store.suite.ts.
 *
 * Terms (see domain/vocabulary.ts): a *route* is one row of the routing map, session_key → entry.
 * A *physical session* is one transcript, named by its session_id; a route points at exactly one
 * open physical session. Closing a physical session never deletes its messages.
 *
 * Every method is one atomic change: either all of it is durable when the promise resolves, or none
 * of it happened. Times are taken from `now` when given (tests, recovery), else the wall clock.
 */
import type {
  ResumeReason,
  SessionEntry,
  SessionSourceFields,
  TokenUsage,
  TranscriptMessage,
  CostStatus,
} from '../vocabulary.js';
import type { TurnCosts } from './costs.js';
import type { BudgetLedger } from './budgets.js';
import type { JsonText } from '../json-text.js';

/** What getOrCreateSession did, so callers can tell the user (e.g. "your session was reset"). */
export type SessionAccessKind = 'created' | 'replaced' | 'resumed' | 'touched';

export interface SessionAccess {
  entry: SessionEntry;
  kind: SessionAccessKind;
  /** The session this access closed (force_new or suspension), if any. */
  closedSessionId: string | null;
}

export interface ListSessionsOptions {
  /** Only entries whose updated_at is within this many minutes of `now`. */
  activeMinutes?: number;
  /** Page size, 1..1000 (default 100). */
  limit?: number;
  /** The `nextCursor` of the previous page. */
  cursor?: string | null;
  now?: Date;
}

export interface SessionPage {
  entries: SessionEntry[];
  /** Pass back to get the next page; null on the last page. */
  nextCursor: string | null;
}

export interface StoredMessage extends TranscriptMessage {
  /** Store-assigned, increasing within a database. */
  id: number;
  session_id: string;
  timestamp: string;
}

/** The two shapes of a serialized transcript (SessionStore.loadWholeTranscript). */
export type TranscriptJsonForm = 'public' | 'stored';

/** What a client is shown of a stored message (no session id, only the fields it has). */
export function publicMessage(m: StoredMessage): Record<string, unknown> {
  const out: Record<string, unknown> = { id: m.id, role: m.role, content: m.content, timestamp: m.timestamp };
  if (m.tool_calls) out.tool_calls = m.tool_calls;
  if (m.tool_call_id) out.tool_call_id = m.tool_call_id;
  if (m.reasoning) out.reasoning = m.reasoning;
  if (m.admission_id) out.admission_id = m.admission_id;
  if (m.tool_outcome) out.tool_outcome = m.tool_outcome;
  if (m.interrupted) out.interrupted = true;
  if (m.steer_id) out.steer_id = m.steer_id;
  return out;
}

/**
 * What a copy of a transcript that ended at some message id needs to catch up (the agent cache):
 * `messages` are the visible ones after that id. The copy is still a prefix of the stored
 * transcript only when `anchored` (its last message is still visible) and `edits` is the value it
 * was taken at: `edits` counts every change other than an append (a rewind, a rewrite, a delete).
 */
export interface TranscriptTail {
  edits: number;
  anchored: boolean;
  messages: StoredMessage[];
}

export interface TranscriptPageOptions {
  /** Only messages with a smaller id (the `id` of the oldest message already shown); absent: the newest. */
  beforeId?: number | null;
  /** Page size, 1..1000. */
  limit: number;
}

export interface TranscriptPage {
  /** Oldest first. */
  messages: StoredMessage[];
  /** Whether older visible messages remain before the first one of this page. */
  hasMore: boolean;
}

export interface RewindResult {
  /** How many messages were soft-deleted. */
  rewound_count: number;
  /** How many user turns were undone (fewer than asked if the transcript is shorter). */
  turns_undone: number;
  /** The text of the earliest user message undone: what /retry sends again. Null if none. */
  target_text: string | null;
}

export interface SearchHit {
  message_id: number;
  session_id: string;
  role: TranscriptMessage['role'];
  /** The message text with matches wrapped in `[` `]`, shortened around them. */
  snippet: string;
  timestamp: string;
}

export interface SearchOptions {
  /** Only this physical session. */
  sessionId?: string;
  /** Default 20, at most 500. Newest messages first. */
  limit?: number;
  /**
   * `plain` (default): the query is words; a message matches when it holds every one of them, and
   * no character has a special meaning. `fts`: the backend's own query language (SQLite FTS5
   * syntax), for phrase, prefix and boolean queries; a query it refuses is invalid_params.
   */
  syntax?: 'plain' | 'fts';
}

export interface SearchIndexStatus {
  /** The index may be missing messages (an index write failed); the next search rebuilds it. */
  stale: boolean;
}

export interface UsageUpdate extends Partial<TokenUsage> {
  /** Prompt tokens of the latest model call (replaces, not adds). */
  last_prompt_tokens?: number;
  /** Added to estimated_cost_usd. */
  cost_usd?: number;
  /** Combined with the session's: the least certain wins (docs/cost.md). */
  cost_status?: CostStatus;
}

/** The cooldown after a failed compression summary (persisted: a restart does not reset it). */
export interface CompressionBackoff {
  /** Failed attempts in a row. */
  failures: number;
  /** ISO-8601 time before which an automatic compression is not tried again. */
  retryAfter: string;
  lastError: string;
}

/** What a compression publishes (SPEC LIN-1). */
export interface CompressionPublication {
  /** The route that moves from parent to child. */
  sessionKey: string;
  parentSessionId: string;
  /** The new physical session id (fresh; never used before). */
  childSessionId: string;
  /** The child transcript: head, summary and tail. */
  messages: readonly TranscriptMessage[];
  /**
   * Whose backoff the success clears (a local session's logical id, or the session key); null when a
   * reduction without a summary keeps the cooldown.
   */
  backoffSubject: string | null;
  /** How the child shortened its parent, kept on the child's row (the lineage record, migration 024). */
  step?: CompressionStep;
  now?: Date;
}

/**
 * A compression's lineage record on its child transcript (issue 26 item 1): `summary`, or `dropped`
 * (the oldest exchanges left out, `dropped` messages) with the summariser's failure when one was
 * asked. The same facts as a local session's receipt lineage step, for every session.
 */
export interface CompressionStep {
  method: 'summary' | 'dropped';
  dropped?: number;
  summary_error?: string;
}

export interface SessionStore extends TurnCosts, BudgetLedger {
  /**
   * The entry on `sessionKey`, decided by ENT-2 (domain/session/lifecycle.ts decideAccess). The key
   * is built by the caller (buildSessionKey); `source` is stored as the entry's origin when a new
   * entry is made, and refreshes display_name/platform/chat_type.
   */
  getOrCreateSession(
    sessionKey: string,
    source: SessionSourceFields,
    options?: { forceNew?: boolean; now?: Date },
  ): Promise<SessionAccess>;

  /** After an exchange: bump updated_at, optionally record last_prompt_tokens. Null if no entry. */
  updateSession(
    sessionKey: string,
    options?: { lastPromptTokens?: number; now?: Date },
  ): Promise<SessionEntry | null>;

  /**
   * Explicit /new or /reset: a new session_id with is_fresh_reset set, the old physical session
   * closed (reason "reset"). Its transcript is kept. Null if the key has no entry.
   */
  resetSession(
    sessionKey: string,
    options?: { displayName?: string; now?: Date },
  ): Promise<SessionEntry | null>;

  /**
   * /resume: point the key at an existing physical session (reopening it) and close the current one.
   * With `expectedSessionId` this is a compare-and-swap: when the key no longer points at that
   * session (a concurrent /new or /resume won), nothing changes and the result is null. Also null
   * when the key has no entry. Throws NotFoundError when the target session does not exist, or, with
   * `sameKey`, when it never was on this key (a chat may resume only its own conversations; another
   * chat's id is answered exactly like an unknown one).
   */
  switchSession(
    sessionKey: string,
    targetSessionId: string,
    options?: { expectedSessionId?: string; sameKey?: boolean; now?: Date },
  ): Promise<SessionEntry | null>;

  /** /stop: the next access replaces the session. False if the key has no entry. */
  suspendSession(sessionKey: string): Promise<boolean>;

  /** Drain timeout / crash recovery. Never overrides a suspension: returns false then (and if no entry). */
  markResumePending(sessionKey: string, reason: ResumeReason, options?: { now?: Date }): Promise<boolean>;

  /** After the resumed turn completed. False if the flag was not set. */
  clearResumePending(sessionKey: string): Promise<boolean>;

  /** A turn started on this key: the in-flight marker recoverInterruptedTurns looks for. */
  markTurnStarted(sessionKey: string, options?: { now?: Date }): Promise<void>;

  /** The turn's reply is durably recorded (or there is nothing to deliver): drop the marker. */
  clearTurnMarker(sessionKey: string): Promise<void>;

  /**
   * Crash recovery: every in-flight marker younger than `maxAgeSeconds` becomes resume_pending
   * (reason restart_interrupted) unless the entry is suspended; all markers are then dropped.
   * Returns the keys marked. Keys without a marker finished their turn and are left alone.
   */
  recoverInterruptedTurns(options: { maxAgeSeconds: number; now?: Date }): Promise<string[]>;

  /**
   * Removes routing entries not updated for `maxAgeDays` (0 disables), closing their physical
   * sessions (transcripts kept). Never removes a suspended entry, the route of a local session (a
   * logical row of the local store owns it: the route is part of that session's identity), or a
   * key of `liveSessionKeys` (sessions with a turn or process running now). Returns the removed keys.
   */
  pruneOldEntries(options: {
    maxAgeDays: number;
    liveSessionKeys?: ReadonlySet<string>;
    now?: Date;
  }): Promise<string[]>;

  /** Entries by updated_at descending (ties by key), one page at a time. */
  listSessions(options?: ListSessionsOptions): Promise<SessionPage>;

  /** The entry whose current session_id is this one, or null. */
  lookupBySessionId(sessionId: string): Promise<SessionEntry | null>;

  /** Whether any session was ever created: routes or closed history. */
  hasAnySessions(): Promise<boolean>;

  /**
   * Appends messages to a physical session's transcript and returns them as stored. With `skipDb`
   * the caller has already persisted them through another path (the runtime's TranscriptSink writes
   * a turn's messages itself): nothing is written and the result is empty. This keeps a caller that
   * both runs a turn and mirrors its messages from storing them twice.
   * Throws NotFoundError when the session does not exist.
   */
  appendToTranscript(
    sessionId: string,
    messages: TranscriptMessage | readonly TranscriptMessage[],
    options?: { skipDb?: boolean; now?: Date },
  ): Promise<StoredMessage[]>;

  /**
   * Replaces the visible transcript (/compress, /retry, /undo): current messages are soft-deleted
   * (kept for audit, never loaded again) and `messages` appended, in one transaction.
   */
  rewriteTranscript(
    sessionId: string,
    messages: readonly TranscriptMessage[],
    options?: { now?: Date },
  ): Promise<StoredMessage[]>;

  /** The visible transcript in order; soft-deleted (rewound, rewritten) messages are excluded. */
  loadTranscript(sessionId: string): Promise<StoredMessage[]>;

  /**
   * The visible transcript as loadTranscript reads it, for a reply that is only written as JSON: a
   * short one as its messages, a long one already serialized as a JSON array, read and serialized
   * off the event loop (domain/json-text.ts) — `public`, each message as publicMessage shows it to
   * a client; `stored`, as loadTranscript returns it. Empty for an unknown session. Optional: a
   * store without it (PostgreSQL, whose reads already wait on the network, not the loop) is read
   * with loadTranscript.
   */
  loadWholeTranscript?(sessionId: string, form: TranscriptJsonForm): Promise<StoredMessage[] | JsonText>;

  /**
   * The visible messages after `afterId` (0: all of them) with the transcript's edit counter, so a
   * cached copy can catch up by appending, or see that it must be rebuilt. Cheap: it reads the new
   * messages only. Throws NotFoundError when the session does not exist.
   */
  loadTranscriptTail(sessionId: string, afterId: number): Promise<TranscriptTail>;

  /**
   * One page of the visible transcript, the newest first in paging order: the `limit` newest messages
   * older than `beforeId`, returned oldest first. A 10,000-message session opens by its last page.
   */
  loadTranscriptPage(sessionId: string, options: TranscriptPageOptions): Promise<TranscriptPage>;

  /**
   * Undoes the last `n` user turns (default 1): the n-th last user message and everything after it
   * are soft-deleted, and one audit row records what was undone.
   */
  rewindSession(sessionId: string, n?: number, options?: { now?: Date }): Promise<RewindResult>;

  /** Full-text search over visible messages (plain words unless `syntax: 'fts'`), newest first. */
  searchMessages(query: string, options?: SearchOptions): Promise<SearchHit[]>;

  /** Rebuilds the derived full-text index from the canonical messages. */
  rebuildSearchIndex(): Promise<void>;

  searchIndexStatus(): Promise<SearchIndexStatus>;

  /**
   * LIN-1, in ONE transaction: the child transcript (a new physical session whose row links to its
   * parent), the route moved from parent to child, the parent closed with reason `compression`
   * (its messages stay, in the store and in search) and the backoff cleared. False, with nothing
   * written, when the route no longer points at the parent.
   */
  publishCompression(publication: CompressionPublication): Promise<boolean>;

  /** The transcript a compression child was made from; null for a session that is not one. */
  parentOf(sessionId: string): Promise<string | null>;

  /** The compression record of a compression child; null for a transcript that is not one (or has none). */
  compressionStepOf(sessionId: string): Promise<CompressionStep | null>;

  compressionBackoff(subject: string): Promise<CompressionBackoff | null>;

  recordCompressionFailure(subject: string, backoff: CompressionBackoff): Promise<void>;

  /** Adds one call's or turn's token usage and cost to the entry's counters. Null if no entry. */
  addUsage(sessionKey: string, usage: UsageUpdate): Promise<SessionEntry | null>;

  close(): Promise<void>;
}
