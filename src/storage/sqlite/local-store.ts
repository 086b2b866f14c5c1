/**
 * LocalSessionStore on SQLite: the same database (and connection) as the session store, so a creation
 * commits its physical session row, route and receipt in one transaction (LOC-1), and a claim or a
 * settlement commits the transcript messages of its turn with it. Most methods run one IMMEDIATE
 * transaction at once, in the caller's tick, and resolve durable (synchronous=FULL); admit, claimNext,
 * settle and the step methods go through the connection's CommitGroup and resolve once their shared
 * commit is durable.
 */
import { claimRequestKey } from './local/request-keys.js';
import { nextStep } from '../../domain/local/admission.js';
import {
  localSessionKey,
  logicalIdOfKey,
  receiptKey,
  type CreationReceipt,
  type OwnerRef,
} from '../../domain/local/receipt.js';
import { newEntry } from '../../domain/session/lifecycle.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type {
  AdmitResult,
  Claimed,
  ClaimResult,
  CreationResult,
  DeleteResult,
  TurnRecord,
  ListLocalOptions,
  LocalSessionRow,
  LocalSessionStore,
  NewAdmission,
  NewCreation,
  RequestKeyClaim,
  RequestKeyClaimResult,
  NewReset,
  NewRewind,
  NewModelChange,
  ModelChangeResult,
  ResetResult,
  RetryResult,
  RewindCommit,
  Settlement,
  StoredPrompt,
  StoreFaults,
  TurnFence,
} from '../../domain/ports/local-store.js';
import type { CompressionPublication } from '../../domain/ports/session-store.js';
import type { LineageFacts } from '../../domain/local/lineage.js';
import { answer, tx } from './actions-common.js';
import { publishCompression } from './compression-actions.js';
import { CommitGroup } from './commit-group.js';
import * as costs from './ops/turn-costs.js';
import { settledTurnCost } from '../rows/turn-costs.js';
import type { SqliteDatabase } from './database.js';
import { appendInTransaction } from './transcript-actions.js';
import * as admissions from './local/admissions.js';
import * as creations from './local/creations.js';
import * as epochs from './local/epochs.js';
import * as manage from './local/manage.js';
import { writeTitle } from './local/titles.js';
import { steerMessage } from '../../domain/local/transitions.js';
import * as transitions from './local/transitions.js';
import { addRouteUsage, readRoute, readRoutedSessionId, touchRoute, writeRoute } from './ops/routes.js';
import { insertSession, readLineageRow, readSession } from './ops/sessions.js';
import { insertAudit } from './ops/audit.js';

export type { StoreFaults } from '../../domain/ports/local-store.js';

export class SqliteLocalStore implements LocalSessionStore {
  /** Group commit of the turn path (admit, claimNext, settle); stats feed the benchmarks. */
  readonly group: CommitGroup;

  constructor(
    readonly db: SqliteDatabase,
    private readonly now: () => Date = () => new Date(),
    private readonly faults: StoreFaults | null = null,
  ) {
    this.group = CommitGroup.of(db);
  }

  private at(): string {
    return this.now().toISOString();
  }

  openEpoch(instanceId: string): Promise<number> {
    return answer(() => tx(this.db, () => epochs.openEpoch(this.db, instanceId, this.at())));
  }

  markCleanShutdown(epoch: number): Promise<void> {
    return answer(() => tx(this.db, () => epochs.markCleanShutdown(this.db, epoch, this.at())));
  }

  claimRequestKey(claim: RequestKeyClaim): Promise<RequestKeyClaimResult> {
    return answer(() => tx(this.db, () => claimRequestKey(this.db, claim)));
  }

  commitCreation(creation: NewCreation): Promise<CreationResult> {
    const { receipt } = creation;
    return answer(() =>
      tx(this.db, () => {
        if (receipt.request_id !== null) {
          const existing = creations.findByRequest(
            this.db,
            receipt.owner,
            receipt.profile,
            receipt.request_id,
          );
          if (existing)
            return { kind: 'existing', session: existing, receipt: this.receiptOf(existing.logical_id) };
        }
        const at = receipt.created_at;
        const key = localSessionKey(receipt.logical_id);
        insertSession(this.db, {
          sessionId: receipt.current_session_id,
          sessionKey: key,
          origin: creation.origin,
          createdAt: at,
        });
        writeRoute(this.db, newEntry(key, receipt.current_session_id, creation.origin, at));
        creations.insertLocalSession(this.db, {
          logical_id: receipt.logical_id,
          profile: receipt.profile,
          owner: receipt.owner,
          request_id: receipt.request_id,
          source: receipt.policy.source,
          title: creation.title,
          hidden: creation.hidden,
          created_at: at,
        });
        if (creation.fork) {
          const { fork } = creation;
          appendInTransaction(this.db, receipt.current_session_id, fork.messages, this.now());
          manage.setForkedFrom(this.db, receipt.logical_id, fork.session_id, fork.message_id);
        }
        this.faults?.hit('creation.transaction');
        creations.writeReceipt(this.db, receiptKey(receipt.logical_id), JSON.stringify(receipt));
        if (creation.audit) insertAudit(this.db, creation.audit);
        const session = creations.readLocalSession(this.db, receipt.logical_id)!;
        return { kind: 'created', session, receipt };
      }),
    );
  }

  /** The stored receipt, parsed; only for rows this store just wrote or validated. */
  private receiptOf(logicalId: string): CreationReceipt {
    return JSON.parse(creations.readReceipt(this.db, receiptKey(logicalId)) ?? 'null') as CreationReceipt;
  }

  findByRequest(owner: OwnerRef, profile: string, requestId: string): Promise<LocalSessionRow | null> {
    return answer(() => creations.findByRequest(this.db, owner, profile, requestId));
  }

  findByTitle(owner: OwnerRef, profile: string, title: string): Promise<LocalSessionRow | null> {
    return answer(() => creations.findByTitle(this.db, owner, profile, title));
  }

  getLocalSession(logicalId: string): Promise<LocalSessionRow | null> {
    return answer(() => creations.readLocalSession(this.db, logicalId));
  }

  listLocalSessions(options: ListLocalOptions): Promise<LocalSessionRow[]> {
    return answer(() => creations.listLocalSessions(this.db, options));
  }

  allLogicalIds(): Promise<string[]> {
    return answer(() => creations.allLogicalIds(this.db));
  }

  readReceiptEvidence(logicalId: string): Promise<{ raw: string | null; routedSessionId: string | null }> {
    return answer(() => {
      const raw = creations.readReceipt(this.db, receiptKey(logicalId));
      const route = readRoute(this.db, localSessionKey(logicalId));
      return { raw, routedSessionId: route?.session_id ?? null };
    });
  }

  setTitle(logicalId: string, title: string, onlyIfUntitled: boolean): Promise<boolean> {
    // Through the group: its flush runs off the event loop, where a lone synchronous commit would not.
    return this.group.run(() => writeTitle(this.db, logicalId, title, onlyIfUntitled));
  }

  setArchived(logicalId: string, archivedAt: string | null): Promise<boolean> {
    return answer(() => tx(this.db, () => manage.setArchived(this.db, logicalId, archivedAt)));
  }

  deleteLocalSession(logicalId: string): Promise<DeleteResult> {
    return answer(() => tx(this.db, () => manage.deleteLocalSession(this.db, logicalId)));
  }

  recentTurns(logicalId: string, limit: number): Promise<TurnRecord[]> {
    return answer(() => manage.recentTurns(this.db, logicalId, limit));
  }

  forksOf(logicalId: string): Promise<LocalSessionRow[]> {
    return answer(() => manage.forksOf(this.db, logicalId));
  }

  setPaused(logicalId: string, reason: string | null): Promise<void> {
    return answer(() => tx(this.db, () => creations.setPaused(this.db, logicalId, reason)));
  }

  logicalIdOfTranscript(sessionId: string): Promise<string | null> {
    return answer(() => {
      const row = readSession(this.db, sessionId);
      return row === null ? null : logicalIdOfKey(row.session_key);
    });
  }

  readLineageFacts(sessionIds: readonly string[]): Promise<Map<string, LineageFacts | null>> {
    return answer(() => new Map(sessionIds.map((id) => [id, readLineageRow(this.db, id)])));
  }

  commitReset(reset: NewReset): Promise<ResetResult> {
    return answer(() =>
      tx(this.db, () => {
        const result = transitions.reset(this.db, reset, () => this.faults?.hit('reset.transaction'));
        if (reset.audit && result.kind !== 'moved') insertAudit(this.db, reset.audit);
        return result;
      }),
    );
  }

  commitModel(change: NewModelChange): Promise<ModelChangeResult> {
    return answer(() => tx(this.db, () => transitions.changeModel(this.db, change)));
  }

  commitRewind(rewind: NewRewind): Promise<RewindCommit> {
    return answer(() => tx(this.db, () => transitions.rewind(this.db, rewind)));
  }

  commitRetry(retry: Parameters<LocalSessionStore['commitRetry']>[0]): Promise<RetryResult> {
    return answer(() => tx(this.db, () => transitions.retry(this.db, retry)));
  }

  admit(admission: NewAdmission): Promise<AdmitResult> {
    return this.group.run((): AdmitResult => {
      // The common case first: a new submission is one INSERT; a repeat finds the first one.
      let inserted;
      try {
        inserted = admissions.insertAdmission(this.db, admission, this.at());
      } catch (error) {
        if (admissions.isMissingParent(error)) return { kind: 'unknown_session' };
        throw error;
      }
      if (inserted) {
        const title = admission.title ?? null;
        const titled = title !== null && writeTitle(this.db, admission.logical_id, title, true);
        if (admission.audit) insertAudit(this.db, admission.audit);
        return { kind: 'admitted', admission: inserted, titled };
      }
      const existing = admissions.findBySubmission(this.db, admission)!;
      if (existing.digest === admission.digest && admission.audit) insertAudit(this.db, admission.audit);
      return existing.digest === admission.digest
        ? { kind: 'existing', admission: existing }
        : { kind: 'conflict', admission: existing };
    });
  }

  getAdmission(admissionId: string) {
    return answer(() => admissions.readAdmission(this.db, admissionId));
  }

  unsettled(logicalId: string) {
    return answer(() => admissions.unsettled(this.db, logicalId));
  }

  sessionsWithQueued(): Promise<string[]> {
    return answer(() => admissions.sessionsWithQueued(this.db));
  }

  claimNext(logicalId: string, epoch: number, options: { lazy?: boolean } = {}): Promise<ClaimResult> {
    const claim = (): ClaimResult => {
      const session = creations.readLocalSession(this.db, logicalId);
      if (!session) return { kind: 'idle' };
      if (session.paused_reason !== null) return { kind: 'paused', reason: session.paused_reason };
      const step = nextStep(admissions.unsettled(this.db, logicalId));
      switch (step.kind) {
        case 'idle':
          return { kind: 'idle' };
        case 'busy':
          return { kind: 'busy', admission_id: step.admission_id };
        case 'blocked':
          return { kind: 'blocked', admission_id: step.admission_id };
        case 'claim': {
          const generation = creations.nextGeneration(this.db, logicalId);
          const at = this.now();
          const admission = admissions.markRunning(
            this.db,
            step.admission_id,
            epoch,
            generation,
            at.toISOString(),
          );
          const input: TranscriptMessage = {
            role: 'user',
            content: admission.text,
            admission_id: admission.admission_id,
          };
          appendInTransaction(this.db, this.physicalId(logicalId), input, at);
          return { kind: 'claimed', session: { ...session, generation }, admission, generation, input };
        }
      }
    };
    return options.lazy ? this.group.runLazily(claim) : this.group.run(claim);
  }

  settle(settlement: Settlement): Promise<boolean> {
    const { admission_id, epoch, generation, outcome, detail, messages, usage } = settlement;
    return this.group.run(() => {
      this.faults?.hit('settle.transaction');
      const at = this.now();
      const logicalId = admissions.settleRunning(
        this.db,
        admission_id,
        epoch,
        generation,
        outcome,
        detail,
        at.toISOString(),
      );
      if (logicalId === null) return false;
      if (messages && messages.length > 0)
        appendInTransaction(this.db, this.physicalId(logicalId), messages, at);
      if (usage) {
        addRouteUsage(this.db, localSessionKey(logicalId), usage);
        const principal = costs.admissionPrincipal(this.db, admission_id);
        const record = settledTurnCost(admission_id, localSessionKey(logicalId), principal, usage, at);
        if (record) costs.recordTurnCost(this.db, record);
      }
      touchRoute(this.db, localSessionKey(logicalId), at.toISOString());
      return true;
    });
  }

  /** The physical session a local session's route points at (its current transcript). */
  private physicalId(logicalId: string): string {
    const sessionId = readRoutedSessionId(this.db, localSessionKey(logicalId));
    if (sessionId === null) throw new Error(`local session ${logicalId} has no route`);
    return sessionId;
  }

  commitCompression(publication: CompressionPublication & { receipt: CreationReceipt }): Promise<boolean> {
    const { receipt } = publication;
    return answer(() =>
      publishCompression(this.db, publication, () => {
        creations.writeReceipt(this.db, receiptKey(receipt.logical_id), JSON.stringify(receipt));
        this.faults?.hit('compress.transaction');
      }),
    );
  }

  cancelQueued(admissionId: string): Promise<boolean> {
    return answer(() => tx(this.db, () => admissions.cancelQueued(this.db, admissionId, this.at())));
  }

  markOrphansUnknown(currentEpoch: number, logicalId?: string) {
    return answer(() =>
      tx(this.db, () => admissions.markOrphansUnknown(this.db, currentEpoch, logicalId ?? null)),
    );
  }

  orphans(currentEpoch: number, logicalId?: string) {
    return answer(() => admissions.orphans(this.db, currentEpoch, logicalId ?? null));
  }

  resumeOrphan(admissionId: string, epoch: number): Promise<Claimed | null> {
    return answer(() =>
      tx(this.db, () => {
        const before = admissions.readAdmission(this.db, admissionId);
        if (!before || before.state !== 'running') return null;
        const session = creations.readLocalSession(this.db, before.logical_id);
        if (!session) return null;
        const generation = creations.nextGeneration(this.db, before.logical_id);
        const admission = admissions.resumeOrphan(this.db, admissionId, epoch, generation);
        if (!admission) return null;
        const input: TranscriptMessage = {
          role: 'user',
          content: admission.text,
          admission_id: admission.admission_id,
        };
        return { kind: 'claimed', session: { ...session, generation }, admission, generation, input };
      }),
    );
  }

  markUnknown(admissionId: string, currentEpoch: number, detail: string): Promise<boolean> {
    return answer(() =>
      tx(this.db, () => admissions.markUnknown(this.db, admissionId, currentEpoch, detail)),
    );
  }

  markToolStarted(fence: TurnFence, toolCallId: string): Promise<boolean> {
    return this.group.run(() =>
      admissions.writeStep(this.db, fence, { tool_started: toolCallId, prompt: null }),
    );
  }

  recordToolResult(fence: TurnFence, messages: readonly TranscriptMessage[]): Promise<boolean> {
    return this.group.run(() => {
      const logicalId = admissions.fencedLogicalId(this.db, fence);
      if (logicalId === null) return false;
      appendInTransaction(this.db, this.physicalId(logicalId), messages, this.now());
      admissions.writeStep(this.db, fence, { tool_started: null, prompt: null });
      return true;
    });
  }

  recordPrompt(fence: TurnFence, prompt: StoredPrompt | null): Promise<boolean> {
    return this.group.run(() => admissions.writeStep(this.db, fence, { prompt }));
  }

  applySteers(fence: TurnFence): Promise<TranscriptMessage[] | null> {
    return this.group.run(() => {
      const logicalId = admissions.fencedLogicalId(this.db, fence);
      if (logicalId === null) return null;
      const at = this.now();
      const steers = admissions.takeQueuedSteers(this.db, logicalId, fence.admission_id, at.toISOString());
      const messages = steers.map((steer) => steerMessage(steer, fence.admission_id));
      if (messages.length > 0) appendInTransaction(this.db, this.physicalId(logicalId), messages, at);
      return messages;
    });
  }

  resolveUnknown(admissionId: string, generation: number, detail: string): Promise<boolean> {
    return answer(() =>
      tx(this.db, () => admissions.resolveUnknown(this.db, admissionId, generation, detail, this.at())),
    );
  }
}
