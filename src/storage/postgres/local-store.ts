/**
 * LocalSessionStore on PostgreSQL: the same connection as the session store (database.ts), so a
 * creation commits its physical session row, route and receipt in one transaction (LOC-1), and a
 * claim or a settlement commits the transcript messages of its turn with it. Each method is one
 * transaction on the connection, durable (`synchronous_commit = on`) when it resolves; admit,
 * claimNext, settle and the step records go through the connection's group commit, as on SQLite.
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
import type { LineageFacts } from '../../domain/local/lineage.js';
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
import type { LeaseFence } from '../../domain/ports/cluster-store.js';
import type { CompressionPublication } from '../../domain/ports/session-store.js';
import { PgCommitGroup } from './commit-group.js';
import { publishCompression, RouteMoved } from './compression-actions.js';
import type { PgDatabase, Sql } from './database.js';
import * as admissions from './local/admissions.js';
import * as creations from './local/creations.js';
import * as manage from './local/manage.js';
import * as transitions from './local/transitions.js';
import { steerMessage } from '../../domain/local/transitions.js';
import { holdsLease } from './ops/leases.js';
import * as costs from './ops/turn-costs.js';
import { settledTurnCost } from '../rows/turn-costs.js';
import { addRouteUsage, readRoute, touchRoute, writeRoute } from './ops/routes.js';
import { insertSession, readLineageRow, readSession } from './ops/sessions.js';
import { insertAudit } from './ops/audit.js';
import { appendInTransaction } from './transcript-actions.js';

export class PostgresLocalStore implements LocalSessionStore {
  /** Group commit of the turn path, shared with every store on the connection. */
  readonly group: PgCommitGroup;

  constructor(
    readonly db: PgDatabase,
    private readonly now: () => Date = () => new Date(),
    private readonly faults: StoreFaults | null = null,
  ) {
    this.group = PgCommitGroup.of(db);
  }

  /** In a cluster (SCL-1): the session leases every claim, settlement and step record is fenced by. */
  private leases: LeaseFence | null = null;

  /** Fences the turn path by session leases from now on (a cluster member calls it once it has its epoch). */
  fenceByLeases(fence: LeaseFence): void {
    this.leases = fence;
  }

  /**
   * True when no lease fences this store, or this instance holds the session's lease under the token
   * it knows, unexpired by the server's clock; the lease row stays locked until the commit (ops/leases.ts).
   */
  private async leaseHeld(sql: Sql, logicalId: string): Promise<boolean> {
    if (this.leases === null) return true;
    const token = this.leases.token(logicalId);
    return token !== null && holdsLease(sql, 'session', logicalId, this.leases.holder, token);
  }

  /** leaseHeld for the session of an admission. */
  private async leaseHeldFor(sql: Sql, admissionId: string): Promise<boolean> {
    if (this.leases === null) return true;
    const logicalId = await admissions.logicalIdOf(sql, admissionId);
    return logicalId !== null && this.leaseHeld(sql, logicalId);
  }

  private at(): string {
    return this.now().toISOString();
  }

  /** A read: alone on the connection, no transaction needed. */
  private read<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.db.exclusive(fn);
  }

  private write<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  openEpoch(instanceId: string): Promise<number> {
    return this.write((sql) => creations.openEpoch(sql, instanceId, this.at()));
  }

  markCleanShutdown(epoch: number): Promise<void> {
    return this.write((sql) => creations.markCleanShutdown(sql, epoch, this.at()));
  }

  claimRequestKey(claim: RequestKeyClaim): Promise<RequestKeyClaimResult> {
    return this.write((sql) => claimRequestKey(sql, claim));
  }

  commitCreation(creation: NewCreation): Promise<CreationResult> {
    const { receipt } = creation;
    return this.write(async (sql): Promise<CreationResult> => {
      if (receipt.request_id !== null) {
        const existing = await creations.findByRequest(
          sql,
          receipt.owner,
          receipt.profile,
          receipt.request_id,
        );
        if (existing) {
          const raw = await creations.readReceipt(sql, receiptKey(existing.logical_id));
          return {
            kind: 'existing',
            session: existing,
            receipt: JSON.parse(raw ?? 'null') as CreationReceipt,
          };
        }
      }
      const at = receipt.created_at;
      const key = localSessionKey(receipt.logical_id);
      await insertSession(sql, {
        sessionId: receipt.current_session_id,
        sessionKey: key,
        origin: creation.origin,
        createdAt: at,
      });
      await writeRoute(sql, newEntry(key, receipt.current_session_id, creation.origin, at));
      await creations.insertLocalSession(sql, {
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
        await appendInTransaction(this.db, sql, receipt.current_session_id, fork.messages, this.now());
        await manage.setForkedFrom(sql, receipt.logical_id, fork.session_id, fork.message_id);
      }
      this.faults?.hit('creation.transaction');
      await creations.writeReceipt(sql, receiptKey(receipt.logical_id), JSON.stringify(receipt));
      if (creation.audit) await insertAudit(sql, creation.audit);
      const session = (await creations.readLocalSession(sql, receipt.logical_id))!;
      return { kind: 'created', session, receipt };
    });
  }

  findByRequest(owner: OwnerRef, profile: string, requestId: string): Promise<LocalSessionRow | null> {
    return this.read((sql) => creations.findByRequest(sql, owner, profile, requestId));
  }

  findByTitle(owner: OwnerRef, profile: string, title: string): Promise<LocalSessionRow | null> {
    return this.read((sql) => creations.findByTitle(sql, owner, profile, title));
  }

  getLocalSession(logicalId: string): Promise<LocalSessionRow | null> {
    return this.read((sql) => creations.readLocalSession(sql, logicalId));
  }

  listLocalSessions(options: ListLocalOptions): Promise<LocalSessionRow[]> {
    return this.read((sql) => creations.listLocalSessions(sql, options));
  }

  allLogicalIds(): Promise<string[]> {
    return this.read((sql) => creations.allLogicalIds(sql));
  }

  readReceiptEvidence(logicalId: string): Promise<{ raw: string | null; routedSessionId: string | null }> {
    return this.read(async (sql) => {
      const raw = await creations.readReceipt(sql, receiptKey(logicalId));
      const route = await readRoute(sql, localSessionKey(logicalId));
      return { raw, routedSessionId: route?.session_id ?? null };
    });
  }

  setArchived(logicalId: string, archivedAt: string | null): Promise<boolean> {
    return this.write((sql) => manage.setArchived(sql, logicalId, archivedAt));
  }

  deleteLocalSession(logicalId: string): Promise<DeleteResult> {
    return this.write((sql) => manage.deleteLocalSession(sql, logicalId));
  }

  recentTurns(logicalId: string, limit: number): Promise<TurnRecord[]> {
    return this.read((sql) => manage.recentTurns(sql, logicalId, limit));
  }

  forksOf(logicalId: string): Promise<LocalSessionRow[]> {
    return this.read((sql) => manage.forksOf(sql, logicalId));
  }

  setPaused(logicalId: string, reason: string | null): Promise<void> {
    return this.write((sql) => creations.setPaused(sql, logicalId, reason));
  }

  setTitle(logicalId: string, title: string, onlyIfUntitled: boolean): Promise<boolean> {
    return this.write((sql) => creations.writeTitle(sql, logicalId, title, onlyIfUntitled));
  }

  logicalIdOfTranscript(sessionId: string): Promise<string | null> {
    return this.read(async (sql) => {
      const row = await readSession(sql, sessionId);
      return row === null ? null : logicalIdOfKey(row.session_key);
    });
  }

  readLineageFacts(sessionIds: readonly string[]): Promise<Map<string, LineageFacts | null>> {
    return this.read(async (sql) => {
      const facts = new Map<string, LineageFacts | null>();
      for (const id of sessionIds) facts.set(id, await readLineageRow(sql, id));
      return facts;
    });
  }

  commitReset(reset: NewReset): Promise<ResetResult> {
    return this.write(async (sql) => {
      const result = await transitions.reset(sql, reset, () => this.faults?.hit('reset.transaction'));
      if (reset.audit && result.kind !== 'moved') await insertAudit(sql, reset.audit);
      return result;
    });
  }

  commitModel(change: NewModelChange): Promise<ModelChangeResult> {
    return this.write((sql) => transitions.changeModel(sql, change));
  }

  commitRewind(rewind: NewRewind): Promise<RewindCommit> {
    return this.write((sql) => transitions.rewind(sql, rewind));
  }

  commitRetry(retry: Parameters<LocalSessionStore['commitRetry']>[0]): Promise<RetryResult> {
    return this.write((sql) => transitions.retry(sql, retry));
  }

  admit(admission: NewAdmission): Promise<AdmitResult> {
    return this.group.run(async (sql): Promise<AdmitResult> => {
      const inserted = await admissions.insertAdmission(sql, admission, this.at());
      if (inserted) {
        const title = admission.title ?? null;
        const titled = title !== null && (await creations.writeTitle(sql, admission.logical_id, title, true));
        if (admission.audit) await insertAudit(sql, admission.audit);
        return { kind: 'admitted', admission: inserted, titled };
      }
      const existing = await admissions.findBySubmission(sql, admission);
      if (existing === null) return { kind: 'unknown_session' };
      if (existing.digest === admission.digest && admission.audit) await insertAudit(sql, admission.audit);
      return existing.digest === admission.digest
        ? { kind: 'existing', admission: existing }
        : { kind: 'conflict', admission: existing };
    });
  }

  getAdmission(admissionId: string) {
    return this.read((sql) => admissions.readAdmission(sql, admissionId));
  }

  unsettled(logicalId: string) {
    return this.read((sql) => admissions.unsettled(sql, logicalId));
  }

  sessionsWithQueued(): Promise<string[]> {
    return this.read((sql) => admissions.sessionsWithQueued(sql));
  }

  claimNext(logicalId: string, epoch: number, options: { lazy?: boolean } = {}): Promise<ClaimResult> {
    const claim = async (sql: Sql): Promise<ClaimResult> => {
      if (!(await this.leaseHeld(sql, logicalId))) return { kind: 'not_owner' };
      const session = await creations.readLocalSession(sql, logicalId);
      if (!session) return { kind: 'idle' };
      if (session.paused_reason !== null) return { kind: 'paused', reason: session.paused_reason };
      const step = nextStep(await admissions.unsettled(sql, logicalId));
      switch (step.kind) {
        case 'idle':
          return { kind: 'idle' };
        case 'busy':
          return { kind: 'busy', admission_id: step.admission_id };
        case 'blocked':
          return { kind: 'blocked', admission_id: step.admission_id };
        case 'claim': {
          const generation = await creations.nextGeneration(sql, logicalId);
          const at = this.now();
          const admission = await admissions.markRunning(
            sql,
            step.admission_id,
            epoch,
            generation,
            at.toISOString(),
          );
          const input = inputOf(admission);
          const current = await transitions.currentTranscript(sql, logicalId);
          await appendInTransaction(this.db, sql, current, input, at);
          return { kind: 'claimed', session: { ...session, generation }, admission, generation, input };
        }
      }
    };
    return options.lazy ? this.group.runLazily(claim) : this.group.run(claim);
  }

  settle(settlement: Settlement): Promise<boolean> {
    const { admission_id, epoch, generation, outcome, detail, messages, usage } = settlement;
    return this.group.run(async (sql) => {
      this.faults?.hit('settle.transaction');
      if (!(await this.leaseHeldFor(sql, admission_id))) return false;
      const at = this.now();
      const logicalId = await admissions.settleRunning(
        sql,
        admission_id,
        epoch,
        generation,
        outcome,
        detail,
        at.toISOString(),
      );
      if (logicalId === null) return false;
      if (messages && messages.length > 0)
        await appendInTransaction(
          this.db,
          sql,
          await transitions.currentTranscript(sql, logicalId),
          messages,
          at,
        );
      if (usage) {
        await addRouteUsage(sql, localSessionKey(logicalId), usage);
        const principal = await costs.admissionPrincipal(sql, admission_id);
        const record = settledTurnCost(admission_id, localSessionKey(logicalId), principal, usage, at);
        if (record) await costs.recordTurnCost(sql, record);
      }
      await touchRoute(sql, localSessionKey(logicalId), at.toISOString());
      return true;
    });
  }

  commitCompression(publication: CompressionPublication & { receipt: CreationReceipt }): Promise<boolean> {
    const { receipt } = publication;
    return publishCompression(this.db, publication, async (sql) => {
      // Fenced like a turn's writes (SCL-1): a compression commits only while this instance holds
      // the session's lease; refused (nothing written, false) once another instance took it.
      if (!(await this.leaseHeld(sql, receipt.logical_id))) throw new RouteMoved();
      await creations.writeReceipt(sql, receiptKey(receipt.logical_id), JSON.stringify(receipt));
      this.faults?.hit('compress.transaction');
    });
  }

  cancelQueued(admissionId: string): Promise<boolean> {
    return this.write((sql) => admissions.cancelQueued(sql, admissionId, this.at()));
  }

  markOrphansUnknown(currentEpoch: number, logicalId?: string) {
    return this.write(async (sql) => {
      // Unscoped, it is a cold start's: in a cluster every recovery is scoped to a leased session.
      if (this.leases !== null && (logicalId === undefined || !(await this.leaseHeld(sql, logicalId))))
        return [];
      return admissions.markOrphansUnknown(sql, currentEpoch, logicalId ?? null);
    });
  }

  orphans(currentEpoch: number, logicalId?: string) {
    return this.read((sql) => admissions.orphans(sql, currentEpoch, logicalId ?? null));
  }

  resumeOrphan(admissionId: string, epoch: number): Promise<Claimed | null> {
    return this.write(async (sql): Promise<Claimed | null> => {
      const before = await admissions.readAdmission(sql, admissionId);
      if (!before || before.state !== 'running') return null;
      if (!(await this.leaseHeld(sql, before.logical_id))) return null;
      const session = await creations.readLocalSession(sql, before.logical_id);
      if (!session) return null;
      const generation = await creations.nextGeneration(sql, before.logical_id);
      const admission = await admissions.resumeOrphan(sql, admissionId, epoch, generation);
      // Nothing taken over: throwing rolls the generation bump back with the rest.
      if (!admission) throw new NotAnOrphan();
      return {
        kind: 'claimed',
        session: { ...session, generation },
        admission,
        generation,
        input: inputOf(admission),
      };
    }).catch((error: unknown) => {
      if (error instanceof NotAnOrphan) return null;
      throw error;
    });
  }

  markUnknown(admissionId: string, currentEpoch: number, detail: string): Promise<boolean> {
    return this.write(
      async (sql) =>
        (await this.leaseHeldFor(sql, admissionId)) &&
        admissions.markUnknown(sql, admissionId, currentEpoch, detail),
    );
  }

  markToolStarted(fence: TurnFence, toolCallId: string): Promise<boolean> {
    return this.group.run(
      async (sql) =>
        (await this.leaseHeldFor(sql, fence.admission_id)) &&
        admissions.writeStep(sql, fence, { tool_started: toolCallId, prompt: null }),
    );
  }

  recordToolResult(fence: TurnFence, messages: readonly TranscriptMessage[]): Promise<boolean> {
    return this.group.run(async (sql) => {
      const logicalId = await admissions.fencedLogicalId(sql, fence);
      if (logicalId === null || !(await this.leaseHeld(sql, logicalId))) return false;
      const current = await transitions.currentTranscript(sql, logicalId);
      await appendInTransaction(this.db, sql, current, messages, this.now());
      await admissions.writeStep(sql, fence, { tool_started: null, prompt: null });
      return true;
    });
  }

  applySteers(fence: TurnFence): Promise<TranscriptMessage[] | null> {
    return this.group.run(async (sql) => {
      const logicalId = await admissions.fencedLogicalId(sql, fence);
      if (logicalId === null || !(await this.leaseHeld(sql, logicalId))) return null;
      const at = this.now();
      const steers = await admissions.takeQueuedSteers(sql, logicalId, fence.admission_id, at.toISOString());
      const messages = steers.map((steer) => steerMessage(steer, fence.admission_id));
      if (messages.length > 0) {
        const current = await transitions.currentTranscript(sql, logicalId);
        await appendInTransaction(this.db, sql, current, messages, at);
      }
      return messages;
    });
  }

  recordPrompt(fence: TurnFence, prompt: StoredPrompt | null): Promise<boolean> {
    return this.group.run(
      async (sql) =>
        (await this.leaseHeldFor(sql, fence.admission_id)) && admissions.writeStep(sql, fence, { prompt }),
    );
  }

  resolveUnknown(admissionId: string, generation: number, detail: string): Promise<boolean> {
    return this.write((sql) => admissions.resolveUnknown(sql, admissionId, generation, detail, this.at()));
  }
}

/** Thrown inside resumeOrphan's transaction to roll it back when the admission is no orphan. */
class NotAnOrphan extends Error {}

/** The user message a claimed admission stands for in its transcript. */
function inputOf(admission: { text: string; admission_id: string }): TranscriptMessage {
  return { role: 'user', content: admission.text, admission_id: admission.admission_id };
}
