/**
 * SessionStore on PostgreSQL. Each method runs one action from entry-actions.ts,
 * transcript-actions.ts or compression-actions.ts in one transaction on the store's connection
 * (database.ts); getOrCreateSession, the first write of every chat turn, goes through the group
 * commit as on SQLite.
 */
import type { ResumeReason, SessionSourceFields, TranscriptMessage } from '../../domain/vocabulary.js';
import type {
  CompressionBackoff,
  CompressionPublication,
  ListSessionsOptions,
  SearchOptions,
  SessionStore,
  TranscriptPageOptions,
  UsageUpdate,
} from '../../domain/ports/session-store.js';
import { PgCommitGroup } from './commit-group.js';
import * as compressions from './compression-actions.js';
import { PgDatabase, type PgOpenOptions } from './database.js';
import * as entries from './entry-actions.js';
import * as compression from './ops/compression.js';
import { findRouteBySessionId } from './ops/routes.js';
import * as transcripts from './transcript-actions.js';
import { loadVisibleMessages } from './ops/messages.js';
import type { CostQuery } from '../../domain/ports/costs.js';
import { costSummary } from './ops/turn-costs.js';
import * as budgets from './ops/budgets.js';
import type { BudgetReservation, SessionBudgetRecord } from '../../domain/ports/budgets.js';
import type { BudgetDecision, BudgetSpends } from '../../domain/budget/decide.js';

export class PostgresSessionStore implements SessionStore {
  /** Connects to `url` and migrates its schema; throws StorageUnavailableError when it cannot. */
  static async open(url: string, options?: PgOpenOptions): Promise<PostgresSessionStore> {
    return new PostgresSessionStore(await PgDatabase.open(url, options));
  }

  /** The connection, shared with the delivery ledger and the local store. */
  constructor(readonly db: PgDatabase) {}

  getOrCreateSession(
    sessionKey: string,
    source: SessionSourceFields,
    options?: { forceNew?: boolean; now?: Date },
  ) {
    try {
      entries.checkAccessInput(sessionKey, source);
    } catch (error) {
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
    return PgCommitGroup.of(this.db).run((sql) =>
      entries.getOrCreateSession(sql, sessionKey, source, options),
    );
  }

  updateSession(sessionKey: string, options?: { lastPromptTokens?: number; now?: Date }) {
    return this.db.transaction((sql) => entries.updateSession(sql, sessionKey, options));
  }

  resetSession(sessionKey: string, options?: { displayName?: string; now?: Date }) {
    return this.db.transaction((sql) => entries.resetSession(sql, sessionKey, options));
  }

  switchSession(
    sessionKey: string,
    targetSessionId: string,
    options?: { expectedSessionId?: string; sameKey?: boolean; now?: Date },
  ) {
    return this.db.transaction((sql) => entries.switchSession(sql, sessionKey, targetSessionId, options));
  }

  suspendSession(sessionKey: string) {
    return this.db.transaction((sql) => entries.suspendSession(sql, sessionKey));
  }

  markResumePending(sessionKey: string, reason: ResumeReason, options?: { now?: Date }) {
    return this.db.transaction((sql) => entries.markResumePending(sql, sessionKey, reason, options));
  }

  clearResumePending(sessionKey: string) {
    return this.db.transaction((sql) => entries.clearResumePending(sql, sessionKey));
  }

  markTurnStarted(sessionKey: string, options?: { now?: Date }) {
    return this.db.transaction((sql) => entries.markTurnStarted(sql, sessionKey, options));
  }

  clearTurnMarker(sessionKey: string) {
    return this.db.transaction((sql) => entries.clearTurnMarker(sql, sessionKey));
  }

  recoverInterruptedTurns(options: { maxAgeSeconds: number; now?: Date }) {
    return this.db.transaction((sql) => entries.recoverInterruptedTurns(sql, options));
  }

  pruneOldEntries(options: { maxAgeDays: number; liveSessionKeys?: ReadonlySet<string>; now?: Date }) {
    return this.db.transaction((sql) => entries.pruneOldEntries(sql, options));
  }

  listSessions(options?: ListSessionsOptions) {
    return this.db.exclusive((sql) => entries.listSessions(sql, options));
  }

  lookupBySessionId(sessionId: string) {
    return this.db.exclusive((sql) => findRouteBySessionId(sql, sessionId));
  }

  hasAnySessions() {
    return this.db.exclusive((sql) => entries.hasAnySessions(sql));
  }

  addUsage(sessionKey: string, usage: UsageUpdate) {
    return this.db.transaction((sql) => entries.addUsage(sql, sessionKey, usage));
  }

  costSummary(query: CostQuery) {
    return this.db.transaction((sql) => costSummary(sql, query));
  }

  reserveBudget(
    r: BudgetReservation,
    decide: (record: SessionBudgetRecord, spends: BudgetSpends) => BudgetDecision,
  ) {
    return this.db.transaction(async (sql) => {
      await budgets.lockBudgets(sql);
      const record = await budgets.readBudgetSession(sql, r.session_key);
      const decision = decide(record, await budgets.readSpends(sql, r.session_key, r.principal, r.day));
      await budgets.writeDecision(sql, r, decision);
      return decision;
    });
  }

  settleBudget(reservationId: string, actual: { tokens: number; usd: number }, at: string) {
    return this.db.transaction((sql) => budgets.settleReservation(sql, reservationId, actual, at));
  }

  recoverBudgetReservations(at: string) {
    return this.db.transaction((sql) => budgets.recoverReservations(sql, at));
  }

  sessionBudget(sessionKey: string) {
    return this.db.exclusive((sql) => budgets.readBudgetSession(sql, sessionKey));
  }

  budgetSpends(sessionKey: string, principal: string, day: string) {
    return this.db.exclusive((sql) => budgets.readSpends(sql, sessionKey, principal, day));
  }

  raiseSessionBudget(sessionKey: string, raised: { tokens: number | null; usd: number | null }) {
    return this.db.transaction((sql) => budgets.raiseSession(sql, sessionKey, raised));
  }

  continueSessionBudget(sessionKey: string) {
    return this.db.transaction((sql) => budgets.continueSession(sql, sessionKey));
  }

  async appendToTranscript(
    sessionId: string,
    input: TranscriptMessage | readonly TranscriptMessage[],
    options: { skipDb?: boolean; now?: Date } = {},
  ) {
    const list = transcripts.validateMessages(input);
    if (options.skipDb === true || list.length === 0) return [];
    const now = options.now ?? new Date();
    return this.db.transaction((sql) => transcripts.appendToTranscript(this.db, sql, sessionId, list, now));
  }

  async rewriteTranscript(
    sessionId: string,
    input: readonly TranscriptMessage[],
    options: { now?: Date } = {},
  ) {
    const list = transcripts.validateMessages(input);
    const now = options.now ?? new Date();
    return this.db.transaction((sql) => transcripts.rewriteTranscript(this.db, sql, sessionId, list, now));
  }

  loadTranscript(sessionId: string) {
    return this.db.exclusive((sql) => loadVisibleMessages(sql, sessionId));
  }

  /** In one transaction, so the three reads see one state. */
  loadTranscriptTail(sessionId: string, afterId: number) {
    return this.db.transaction((sql) => transcripts.loadTranscriptTail(sql, sessionId, afterId));
  }

  loadTranscriptPage(sessionId: string, options: TranscriptPageOptions) {
    return this.db.exclusive((sql) => transcripts.loadTranscriptPage(sql, sessionId, options));
  }

  async rewindSession(sessionId: string, n = 1, options: { now?: Date } = {}) {
    transcripts.checkRewindTurns(n);
    const at = (options.now ?? new Date()).toISOString();
    return this.db.transaction(async (sql) => {
      await transcripts.requireSessionOf(sql, sessionId);
      return transcripts.rewindInTransaction(sql, sessionId, n, at, null);
    });
  }

  searchMessages(query: string, options?: SearchOptions) {
    return transcripts.searchMessages(this.db, query, options);
  }

  rebuildSearchIndex() {
    return transcripts.rebuildSearchIndex(this.db);
  }

  searchIndexStatus() {
    return transcripts.searchIndexStatus(this.db);
  }

  publishCompression(publication: CompressionPublication) {
    return compressions.publishCompression(this.db, publication);
  }

  parentOf(sessionId: string) {
    return this.db.exclusive((sql) => compression.readParentSessionId(sql, sessionId));
  }

  compressionBackoff(subject: string) {
    return this.db.exclusive((sql) => compression.readBackoff(sql, subject));
  }

  recordCompressionFailure(subject: string, backoff: CompressionBackoff) {
    return this.db.transaction((sql) => compression.writeBackoff(sql, subject, backoff));
  }

  async close() {
    transcripts.cancelIndexCatchUp(this.db);
    await this.db.close();
  }
}
