/**
 * The storage contract of gateway-owned local sessions: authority epochs, creation receipts and
 * durable admissions. Backend-neutral: SQLite implements it now, PostgreSQL later, and both pass the
 * same shared suite. Every method is one transaction; nothing is acknowledged before it commits.
 * Every method answers with a promise: a backend may reach its database over a connection.
 *
 * The three methods of the turn path — admit, claimNext and settle — are group-committed: calls made
 * together (from any number of sessions) share one transaction and one log flush, and
 * each promise resolves only after that commit. A lazy claimNext alone may resolve once committed,
 * its durability left to the turn's next durable commit (docs/decisions.md, "The claim's commit").
 */
import type { AdmissionState } from '../local/admission.js';
import type { LineageFacts } from '../local/lineage.js';
import type { CreationReceipt, OwnerRef } from '../local/receipt.js';
import type { SessionSourceFields, TranscriptMessage } from '../vocabulary.js';
import type { CompressionPublication, RewindResult, UsageUpdate } from './session-store.js';
import type { AuditEntry } from './access-store.js';

/** A local session's public row (the receipt is private and read separately). */
export interface LocalSessionRow {
  logical_id: string;
  profile: string;
  owner: OwnerRef;
  request_id: string | null;
  source: string;
  title: string | null;
  hidden: boolean;
  /** The current execution generation: bumped by every claim. */
  generation: number;
  created_at: string;
  /** Set when recovery refused the session's receipt: nothing runs until an operator looks. */
  paused_reason: string | null;
  /** When session.archive archived it (left out of the default lists); null: not archived. */
  archived_at: string | null;
  /** The session and message this one was forked from (session.fork); null: not a fork. */
  forked_from: { session_id: string; message_id: number } | null;
}

/** An API request key bound to the request first made with it. */
export interface RequestKeyClaim {
  owner: OwnerRef;
  profile: string;
  key_hash: string;
  digest: string;
  logical_id: string;
  /** ISO time of this use. */
  at: string;
}

export type RequestKeyClaimResult =
  { kind: 'claimed' } | { kind: 'existing'; digest: string; logical_id: string };

export interface AdmissionRow {
  admission_id: string;
  logical_id: string;
  /** Global FIFO order; per session it orders the session's admissions. */
  seq: number;
  submission_id: string;
  submitter: OwnerRef;
  profile: string;
  digest: string;
  text: string;
  state: AdmissionState;
  epoch: number | null;
  generation: number | null;
  admitted_at: string;
  started_at: string | null;
  settled_at: string | null;
  /** A human-readable note on how it settled (error message, who resolved it). */
  detail: string | null;
  /** How many times recovery resumed this turn after a crash (REC-7). */
  resumes: number;
  /** The tool call marked started whose result is not stored yet (REC-7): it was running. */
  tool_started: string | null;
  /** The prompt the turn is waiting on, recreated by recovery with the same id (REC-7). */
  prompt: StoredPrompt | null;
  /** `steer`: a correction of the running turn, applied at its next model-call boundary (issue 28). */
  mode: AdmissionMode;
  /** The turn a steer was applied in; null while it was not (then it runs, or ran, as a turn). */
  applied_to: string | null;
}

/**
 * What an admission is: a `prompt` is a turn of its own; a `steer` corrects the turn running when it
 * is admitted: applied before that turn's next model call, or, when the turn ends first, run as the
 * next turn's input like a prompt.
 */
export type AdmissionMode = 'prompt' | 'steer';

/** An open approval or clarify prompt of a running turn, as the store keeps it. */
export interface StoredPrompt {
  prompt_id: string;
  type: 'approval' | 'clarify';
  /** The tool call that asked. */
  tool_call_id: string;
  /** When it was first asked (ISO); its timeout counts from here, across restarts. */
  requested_at: string;
}

/** Names the running turn a step record belongs to: written only while epoch and generation own it. */
export interface TurnFence {
  admission_id: string;
  epoch: number;
  generation: number;
}

export interface NewCreation {
  receipt: CreationReceipt;
  /** The origin recorded on the physical session row and its route. */
  origin: SessionSourceFields;
  title: string | null;
  hidden: boolean;
  /**
   * session.fork: the new session's first transcript starts with these messages, copied from the
   * source's up to `message_id`, in the creation's own transaction.
   */
  fork?: { session_id: string; message_id: number; messages: readonly TranscriptMessage[] };
  /** The call's audit row (issue 30): written in this commit when the session is created. */
  audit?: AuditEntry | null;
}

/** A turn as the flight recorder reads it: its admission and, once settled, what it cost. */
export interface TurnRecord {
  admission: AdmissionRow;
  cost: {
    provider: string;
    model: string;
    input_tokens: number;
    output_tokens: number;
    cache_read_tokens: number;
    cost_usd: number;
    cost_status: string;
  } | null;
}

export type DeleteResult =
  /** Gone: every transcript, index row, receipt, admission and cost row of the session. */
  | { kind: 'deleted'; transcripts: number; messages: number }
  /** A turn of the session is running: nothing deleted. */
  | { kind: 'running'; admission_id: string }
  | { kind: 'missing' };

export type CreationResult =
  | { kind: 'created'; session: LocalSessionRow; receipt: CreationReceipt }
  | { kind: 'existing'; session: LocalSessionRow; receipt: CreationReceipt };

export interface NewAdmission {
  admission_id: string;
  logical_id: string;
  submission_id: string;
  submitter: OwnerRef;
  profile: string;
  digest: string;
  text: string;
  /** AUTH-5: the private profile/session/principal binding of a cross-principal submission. */
  binding: string | null;
  /**
   * The title the session takes from this message if it has none: stored in the admission's own
   * commit, and only when the admission is new and the session still untitled (no commit of its own
   * on a session's first turn).
   */
  title?: string | null;
  /** Absent: `prompt`. */
  mode?: AdmissionMode;
  /** The call's audit row (issue 30): written in this commit when the admission is new or a repeat. */
  audit?: AuditEntry | null;
}

export type AdmitResult =
  /** `titled`: the admission's title was stored (the session had none). */
  | { kind: 'admitted'; admission: AdmissionRow; titled?: boolean }
  | { kind: 'existing'; admission: AdmissionRow }
  | { kind: 'conflict'; admission: AdmissionRow }
  | { kind: 'unknown_session' };

export interface Claimed {
  kind: 'claimed';
  session: LocalSessionRow;
  admission: AdmissionRow;
  generation: number;
  /** The admission's text as stored in the transcript by the claim (with its admission_id). */
  input: TranscriptMessage;
}

export type ClaimResult =
  | Claimed
  | { kind: 'idle' }
  | { kind: 'busy'; admission_id: string }
  | { kind: 'blocked'; admission_id: string }
  | { kind: 'paused'; reason: string }
  /** In a cluster (SCL-1): this instance does not hold the session's lease; nothing was claimed. */
  | { kind: 'not_owner' };

export type SettleOutcome = 'completed' | 'failed' | 'cancelled' | 'interrupted';

export interface Settlement {
  admission_id: string;
  epoch: number;
  generation: number;
  outcome: SettleOutcome;
  detail: string | null;
  /** The turn's last messages (its final answer), stored in the settlement's transaction. */
  messages?: readonly TranscriptMessage[];
  /** The turn's token usage, added to the session's counters in the same transaction. */
  usage?: UsageUpdate;
}

/** LIN-2: a reset of a local session, fenced by the transcript it expects to leave. */
export interface NewReset {
  logical_id: string;
  /** The physical transcript the caller saw as current; a reset from any other one is refused. */
  expected_session_id: string;
  new_session_id: string;
  request_id: string;
  at: string;
  /** The call's audit row (issue 30): written in this commit unless the session moved on. */
  audit?: AuditEntry | null;
}

export type ResetResult =
  /** Committed: the new receipt (current transcript advanced, the reset step appended). */
  | { kind: 'reset'; receipt: CreationReceipt }
  /** This request_id already reset the session: the receipt as it stands, nothing written. */
  | { kind: 'duplicate'; receipt: CreationReceipt }
  /** The receipt or the route no longer point at `expected_session_id`: nothing written. */
  | { kind: 'moved' };

/** Issue 26 item 6: a local session moved to another configured provider and model. */
export interface NewModelChange {
  logical_id: string;
  provider: string;
  model: string;
  at: string;
}

export type ModelChangeResult =
  /** Committed: the receipt with the new policy and the change appended to its `model_changes`. */
  | { kind: 'changed'; receipt: CreationReceipt }
  /** The session already runs on this provider and model: nothing written. */
  | { kind: 'unchanged'; receipt: CreationReceipt }
  /** No receipt: nothing written. */
  | { kind: 'missing' };

/** STO-2 rewind of a local session's current transcript, named by a request (session.undo, retry). */
export interface NewRewind {
  logical_id: string;
  /** Unique per request: a repeat finds the rewind it made instead of undoing another turn. */
  request_key: string;
  turns: number;
  at: string;
}

export type RewindCommit = RewindResult & { duplicate: boolean };

export type RetryResult =
  /** The last user turn was undone and its text admitted again, in one transaction. */
  | { kind: 'retried'; rewind: RewindResult; admission: AdmissionRow }
  /** This submission was already retried: its admission as it stands, nothing written. */
  | { kind: 'duplicate'; admission: AdmissionRow }
  /** There is no user turn to retry. */
  | { kind: 'nothing' };

/** Test-only hook points inside transactions (crash tests arm them to die mid-transaction). */
export interface StoreFaults {
  hit(
    point: 'creation.transaction' | 'settle.transaction' | 'reset.transaction' | 'compress.transaction',
  ): void;
}

/** Where a walk of the local sessions stands: the last row of the previous page. */
export interface LocalListPosition {
  created_at: string;
  logical_id: string;
}

export interface ListLocalOptions {
  limit: number;
  includeHidden?: boolean;
  before?: LocalListPosition;
}

export interface LocalSessionStore {
  /** Opens a new authority epoch, durably. Returns its number (strictly increasing). */
  openEpoch(instanceId: string): Promise<number>;
  /** Records that `epoch` ended with a graceful stop. */
  markCleanShutdown(epoch: number): Promise<void>;

  /**
   * LOC-1/LOC-3: in ONE transaction, the physical session row, its route and the private creation
   * receipt; or the existing identity when the same owner+profile already used this request_id
   * (the caller compares creation digests).
   */
  commitCreation(creation: NewCreation): Promise<CreationResult>;
  /**
   * Binds a request key (an API client's Idempotency-Key, hashed) of one principal to its first
   * request: stored when new, else the request it is bound to. Keys first used more than a day
   * before `at` are pruned in the same call (migration 020).
   */
  claimRequestKey(claim: RequestKeyClaim): Promise<RequestKeyClaimResult>;
  findByRequest(owner: OwnerRef, profile: string, requestId: string): Promise<LocalSessionRow | null>;
  findByTitle(owner: OwnerRef, profile: string, title: string): Promise<LocalSessionRow | null>;
  getLocalSession(logicalId: string): Promise<LocalSessionRow | null>;
  /**
   * Newest first (created_at, then logical_id, both descending); with `before`, only the rows after
   * that one in this order: a page of a keyset walk that rows created meanwhile do not shift.
   */
  listLocalSessions(options: ListLocalOptions): Promise<LocalSessionRow[]>;
  allLogicalIds(): Promise<string[]>;
  /** The raw private receipt text (null when missing), and the physical id its route points at. */
  readReceiptEvidence(logicalId: string): Promise<{ raw: string | null; routedSessionId: string | null }>;
  setPaused(logicalId: string, reason: string | null): Promise<void>;
  /** Archives (a time) or unarchives (null) a session. True when the row exists. */
  setArchived(logicalId: string, archivedAt: string | null): Promise<boolean>;
  /**
   * Deletes a local session and everything stored for it, in ONE transaction: its logical row,
   * receipt, admissions, every transcript of its lineage (messages, their full-text index rows,
   * rewinds), its route, turn markers, cost rows and compression backoff. Refused (nothing
   * deleted) while one of its admissions is running.
   */
  deleteLocalSession(logicalId: string): Promise<DeleteResult>;
  /** The session's newest `limit` turns (admissions, any state) with their cost rows, newest first. */
  recentTurns(logicalId: string, limit: number): Promise<TurnRecord[]>;
  /** The sessions forked from this one (session.fork), oldest first. */
  forksOf(logicalId: string): Promise<LocalSessionRow[]>;
  /** Sets a session's title; with `onlyIfUntitled`, only when it has none. True when it changed. */
  setTitle(logicalId: string, title: string, onlyIfUntitled: boolean): Promise<boolean>;
  /**
   * The local session a physical transcript belongs to (every transcript of its lineage lives on
   * its route key), or null when the transcript is not a local session's.
   */
  logicalIdOfTranscript(sessionId: string): Promise<string | null>;
  /** LIN-3: what the store holds about each physical transcript named (null when it does not exist). */
  readLineageFacts(sessionIds: readonly string[]): Promise<Map<string, LineageFacts | null>>;

  /**
   * LIN-2: in ONE transaction, closes the current transcript (`reset`), creates its empty child,
   * points the route at it and writes the receipt with the reset step. Admissions, the policy and
   * the owner stay on the logical row untouched.
   */
  commitReset(reset: NewReset): Promise<ResetResult>;
  /**
   * Issue 26 item 6: in ONE transaction, rewrites the frozen policy's provider and model in the
   * receipt (a session-own base_url and api_key are given up) and records the change in it.
   */
  commitModel(change: NewModelChange): Promise<ModelChangeResult>;
  /** Rewinds the current transcript of a local session by `turns` user turns, idempotent by request. */
  commitRewind(rewind: NewRewind): Promise<RewindCommit>;
  /**
   * Undoes the last user turn of the current transcript and admits its text again as `admission`
   * (whose submission_id is derived from the request), in one transaction; idempotent by that id.
   */
  commitRetry(retry: {
    admission: Omit<NewAdmission, 'text' | 'digest'>;
    request_key: string;
    at: string;
  }): Promise<RetryResult>;

  /** LOC-8: one durable admission (group-committed with whatever else is queued with it). */
  admit(admission: NewAdmission): Promise<AdmitResult>;
  getAdmission(admissionId: string): Promise<AdmissionRow | null>;
  /** Unsettled admissions (queued, running, unknown) of a session in FIFO order. */
  unsettled(logicalId: string): Promise<AdmissionRow[]>;
  /** Logical ids that have queued admissions, for the scheduler after a restart. */
  sessionsWithQueued(): Promise<string[]>;
  /**
   * Claims the next admission of a session for `epoch`, bumping its generation, and in the same
   * transaction appends its text as the user message of the session's transcript: a started turn's
   * input is always stored (group-committed). With `lazy`, it may resolve before its commit is
   * flushed: nothing acknowledged or executed depends on it before the turn's next durable commit,
   * which covers it (docs/decisions.md, "The claim's commit"; the scheduler says when).
   */
  claimNext(logicalId: string, epoch: number, options?: { lazy?: boolean }): Promise<ClaimResult>;
  /**
   * Settles a running admission, with the turn's final messages and usage in the same transaction;
   * false (and nothing written) when the epoch or generation is stale (REC-3). Group-committed.
   */
  settle(settlement: Settlement): Promise<boolean>;
  /**
   * LIN-1 for a local session, in ONE transaction: everything SessionStore.publishCompression
   * writes, plus the receipt advanced to the child (its private current_session_id and one more
   * lineage step). The logical row, its policy, owner and admissions are untouched. False, with
   * nothing written, when the route no longer points at the parent, or (a store fenced by leases,
   * SCL-1) this instance no longer holds the session's lease.
   */
  commitCompression(publication: CompressionPublication & { receipt: CreationReceipt }): Promise<boolean>;
  /** Cancels a queued admission; false when it is no longer queued. */
  cancelQueued(admissionId: string): Promise<boolean>;
  /**
   * REC-2: every admission still `running` under another epoch becomes `unknown`. Returns them.
   * With `logicalId`, only that session's (a cluster's takeover recovers one session at a time).
   */
  markOrphansUnknown(currentEpoch: number, logicalId?: string): Promise<AdmissionRow[]>;
  /**
   * REC-7: the admissions still `running` under another epoch (read only); with `logicalId`, only
   * that session's. "Another", not "an older": in a cluster the session's previous owner may have
   * opened its epoch after this instance did.
   */
  orphans(currentEpoch: number, logicalId?: string): Promise<AdmissionRow[]>;
  /**
   * REC-7: takes an orphan over for `epoch` under a new generation, counting one more resume; the
   * turn goes on from its stored boundary. Null when it is no longer a running orphan.
   */
  resumeOrphan(admissionId: string, epoch: number): Promise<Claimed | null>;
  /** An orphan recovery will not resume becomes `unknown`, with why in its detail. */
  markUnknown(admissionId: string, currentEpoch: number, detail: string): Promise<boolean>;
  /**
   * REC-7 step boundaries of a running turn, group-committed and fenced (false: stale, nothing
   * written). markToolStarted is written before the tool's process is spawned (and clears the
   * prompt it waited on); recordToolResult appends the result and clears the mark in one commit;
   * recordPrompt keeps (or, with null, drops) the prompt the turn waits on.
   */
  markToolStarted(fence: TurnFence, toolCallId: string): Promise<boolean>;
  recordToolResult(fence: TurnFence, messages: readonly TranscriptMessage[]): Promise<boolean>;
  recordPrompt(fence: TurnFence, prompt: StoredPrompt | null): Promise<boolean>;
  /**
   * Issue 28, a step boundary of a running turn: in ONE transaction (group-committed and fenced),
   * every queued steer of the turn's session is appended to its transcript as a user message of the
   * turn (`admission_id` the turn's, `steer_id` the steer's) and settled `completed` with
   * `applied_to` the turn. Returns those messages (empty: none queued); null when stale, and then
   * nothing was written. A steer is so applied exactly once: a crash before the commit leaves it
   * queued, after it the resumed turn replays it from the transcript.
   */
  applySteers(fence: TurnFence): Promise<TranscriptMessage[] | null>;
  /** Settles an `unknown` admission as interrupted; false when it is not unknown or the generation differs. */
  resolveUnknown(admissionId: string, generation: number, detail: string): Promise<boolean>;
}
