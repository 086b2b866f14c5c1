/**
 * SessionStore on SQLite. better-sqlite3 is synchronous; this class is the asynchronous face the
 * contract asks for (so PostgreSQL can implement the same one). Each method runs one action from
 * entry-actions.ts or transcript-actions.ts, and a thrown error becomes a rejected promise.
 */
import type { ResumeReason, SessionSourceFields, TranscriptMessage } from '../../domain/vocabulary.js';
import type {
  CompressionBackoff,
  CompressionPublication,
  ListSessionsOptions,
  SearchOptions,
  SessionStore,
  StoredMessage,
  TranscriptJsonForm,
  TranscriptPageOptions,
  UsageUpdate,
} from '../../domain/ports/session-store.js';
import type { JsonText } from '../../domain/json-text.js';
import { acquireCheckpointer, type Checkpointer } from './checkpointer.js';
import { CommitGroup } from './commit-group.js';
import { openDatabase, type OpenOptions, type SqliteDatabase } from './database.js';
import * as entries from './entry-actions.js';
import { statement } from './statements.js';
import * as transcripts from './transcript-actions.js';
import * as compressions from './compression-actions.js';
import type { CostQuery } from '../../domain/ports/costs.js';
import { costSummary } from './ops/turn-costs.js';
import * as budgets from './ops/budgets.js';
import { answer as settle, tx } from './actions-common.js';
import { TranscriptJsonReader } from './transcript-json.js';
import type { BudgetReservation, SessionBudgetRecord } from '../../domain/ports/budgets.js';
import type { BudgetDecision, BudgetSpends } from '../../domain/budget/decide.js';

export interface SessionStoreOpenOptions extends OpenOptions {
  /**
   * The transcript JSON thread's entry (dist/storage/sqlite/transcript-json-worker.js): with it,
   * loadWholeTranscript reads whole transcripts off the event loop. Without it the store has no
   * loadWholeTranscript, and callers read with loadTranscript.
   */
  transcriptWorker?: string;
}

export class SqliteSessionStore implements SessionStore {
  /** Opens (or creates) the database at `file`; throws StorageUnavailableError when it cannot. */
  static open(file: string, options?: SessionStoreOpenOptions): SqliteSessionStore {
    const db = openDatabase(file, options);
    const changes = () => (db.open ? (statement(db, 'SELECT total_changes()').pluck().get() as number) : 0);
    return new SqliteSessionStore(
      db,
      options?.backgroundCheckpoints
        ? acquireCheckpointer(
            file,
            changes,
            options.backgroundCheckpoints === true ? {} : options.backgroundCheckpoints,
          )
        : null,
      options?.transcriptWorker
        ? new TranscriptJsonReader(db.name, options.transcriptWorker, {
            busyTimeoutMs: options.busyTimeoutMs,
          })
        : null,
    );
  }

  /**
   * When opened with a thread for them (transcript-json.ts): a transcript shorter than one slice
   * (TRANSCRIPT_SLICE messages) is read here in one statement, as loadTranscript would; a longer
   * one is read and serialized on the thread, which is started only for one. (The first slice
   * read for a longer one is dropped: the thread reads the whole in one statement of its own.)
   */
  readonly loadWholeTranscript?: (
    sessionId: string,
    form: TranscriptJsonForm,
  ) => Promise<StoredMessage[] | JsonText>;

  /**
   * The connection, for code that composes storage operations in its own transaction, and the
   * background checkpointer it holds, if any.
   */
  constructor(
    readonly db: SqliteDatabase,
    readonly checkpointer: Checkpointer | null = null,
    private readonly transcriptJson: TranscriptJsonReader | null = null,
  ) {
    if (transcriptJson)
      this.loadWholeTranscript = async (sessionId, form) => {
        const first = await settle(() => transcripts.loadTranscriptStart(this.db, sessionId));
        return first.length < transcripts.TRANSCRIPT_SLICE ? first : transcriptJson.read(sessionId, form);
      };
  }

  /**
   * Through the connection's group commit: the first message of many chats at once creates their
   * sessions in shared commits (it is the first write of every chat turn).
   */
  getOrCreateSession(
    sessionKey: string,
    source: SessionSourceFields,
    options?: { forceNew?: boolean; now?: Date },
  ) {
    return CommitGroup.of(this.db).run(() =>
      entries.getOrCreateSession(this.db, sessionKey, source, options),
    );
  }

  updateSession(sessionKey: string, options?: { lastPromptTokens?: number; now?: Date }) {
    return settle(() => entries.updateSession(this.db, sessionKey, options));
  }

  resetSession(sessionKey: string, options?: { displayName?: string; now?: Date }) {
    return settle(() => entries.resetSession(this.db, sessionKey, options));
  }

  switchSession(
    sessionKey: string,
    targetSessionId: string,
    options?: { expectedSessionId?: string; sameKey?: boolean; now?: Date },
  ) {
    return settle(() => entries.switchSession(this.db, sessionKey, targetSessionId, options));
  }

  suspendSession(sessionKey: string) {
    return settle(() => entries.suspendSession(this.db, sessionKey));
  }

  markResumePending(sessionKey: string, reason: ResumeReason, options?: { now?: Date }) {
    return settle(() => entries.markResumePending(this.db, sessionKey, reason, options));
  }

  clearResumePending(sessionKey: string) {
    return settle(() => entries.clearResumePending(this.db, sessionKey));
  }

  markTurnStarted(sessionKey: string, options?: { now?: Date }) {
    return settle(() => entries.markTurnStarted(this.db, sessionKey, options));
  }

  clearTurnMarker(sessionKey: string) {
    return settle(() => entries.clearTurnMarker(this.db, sessionKey));
  }

  recoverInterruptedTurns(options: { maxAgeSeconds: number; now?: Date }) {
    return settle(() => entries.recoverInterruptedTurns(this.db, options));
  }

  pruneOldEntries(options: { maxAgeDays: number; liveSessionKeys?: ReadonlySet<string>; now?: Date }) {
    return settle(() => entries.pruneOldEntries(this.db, options));
  }

  listSessions(options?: ListSessionsOptions) {
    return settle(() => entries.listSessions(this.db, options));
  }

  lookupBySessionId(sessionId: string) {
    return settle(() => entries.lookupBySessionId(this.db, sessionId));
  }

  hasAnySessions() {
    return settle(() => entries.hasAnySessions(this.db));
  }

  addUsage(sessionKey: string, usage: UsageUpdate) {
    return settle(() => entries.addUsage(this.db, sessionKey, usage));
  }

  costSummary(query: CostQuery) {
    return settle(() => costSummary(this.db, query));
  }

  reserveBudget(
    r: BudgetReservation,
    decide: (record: SessionBudgetRecord, spends: BudgetSpends) => BudgetDecision,
  ) {
    return settle(() =>
      tx(this.db, () => {
        const record = budgets.readBudgetSession(this.db, r.session_key);
        const decision = decide(record, budgets.readSpends(this.db, r.session_key, r.principal, r.day));
        budgets.writeDecision(this.db, r, decision);
        return decision;
      }),
    );
  }

  settleBudget(reservationId: string, actual: { tokens: number; usd: number }, at: string) {
    return settle(() => tx(this.db, () => budgets.settleReservation(this.db, reservationId, actual, at)));
  }

  recoverBudgetReservations(at: string) {
    return settle(() => tx(this.db, () => budgets.recoverReservations(this.db, at)));
  }

  sessionBudget(sessionKey: string) {
    return settle(() => budgets.readBudgetSession(this.db, sessionKey));
  }

  budgetSpends(sessionKey: string, principal: string, day: string) {
    return settle(() => budgets.readSpends(this.db, sessionKey, principal, day));
  }

  raiseSessionBudget(sessionKey: string, raised: { tokens: number | null; usd: number | null }) {
    return settle(() => tx(this.db, () => budgets.raiseSession(this.db, sessionKey, raised)));
  }

  continueSessionBudget(sessionKey: string) {
    return settle(() => tx(this.db, () => budgets.continueSession(this.db, sessionKey)));
  }

  appendToTranscript(
    sessionId: string,
    messages: TranscriptMessage | readonly TranscriptMessage[],
    options?: { skipDb?: boolean; now?: Date },
  ) {
    return settle(() => transcripts.appendToTranscript(this.db, sessionId, messages, options));
  }

  rewriteTranscript(sessionId: string, messages: readonly TranscriptMessage[], options?: { now?: Date }) {
    return settle(() => transcripts.rewriteTranscript(this.db, sessionId, messages, options));
  }

  /** Read in slices with the event loop free between them (loadTranscriptInSlices). */
  loadTranscript(sessionId: string) {
    return transcripts.loadTranscriptInSlices(this.db, sessionId);
  }

  loadTranscriptTail(sessionId: string, afterId: number) {
    return settle(() => transcripts.loadTranscriptTail(this.db, sessionId, afterId));
  }

  loadTranscriptPage(sessionId: string, options: TranscriptPageOptions) {
    return settle(() => transcripts.loadTranscriptPage(this.db, sessionId, options));
  }

  rewindSession(sessionId: string, n?: number, options?: { now?: Date }) {
    return settle(() => transcripts.rewindSession(this.db, sessionId, n, options));
  }

  searchMessages(query: string, options?: SearchOptions) {
    return settle(() => transcripts.searchMessages(this.db, query, options));
  }

  publishCompression(publication: CompressionPublication) {
    return settle(() => compressions.publishCompression(this.db, publication));
  }

  parentOf(sessionId: string) {
    return settle(() => compressions.parentOf(this.db, sessionId));
  }

  compressionStepOf(sessionId: string) {
    return settle(() => compressions.compressionStepOf(this.db, sessionId));
  }

  compressionBackoff(subject: string) {
    return settle(() => compressions.readBackoff(this.db, subject));
  }

  recordCompressionFailure(subject: string, backoff: CompressionBackoff) {
    return settle(() => compressions.recordFailure(this.db, subject, backoff));
  }

  rebuildSearchIndex() {
    return settle(() => transcripts.rebuildSearchIndex(this.db));
  }

  searchIndexStatus() {
    return settle(() => transcripts.searchIndexStatus(this.db));
  }

  async close() {
    await this.transcriptJson?.close();
    // The group's last log flush finishes before the connection (and its -wal file) goes away.
    await CommitGroup.closeOf(this.db);
    transcripts.cancelIndexCatchUp(this.db);
    await this.checkpointer?.release();
    return settle(() => {
      if (this.db.open) this.db.close();
    });
  }
}
