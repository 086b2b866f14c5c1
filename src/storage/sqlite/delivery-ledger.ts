/**
 * The delivery ledger on SQLite, sharing the session store's connection (one file, one transaction).
 * The operations on a turn's path (startTurn, recordReply, endTurn, markDelivered, endStreak) go
 * through the connection's CommitGroup: operations of many chats queued together share one
 * IMMEDIATE transaction and one log flush, each resolving after that commit, and a failing operation
 * rolls back and rejects alone.
 */
import {
  isSilentReply,
  planRecovery,
  STUCK_LOOP_RESTARTS,
  NOTICE_PREFIX,
  STALE_NOTICE,
  suspendedNotice,
  type MarkerFact,
} from '../../domain/messaging/recovery.js';
import type { InboundRef } from '../../domain/messaging/adapter.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import { NotFoundError } from '../../domain/errors.js';
import {
  INBOUND_RETENTION_SECONDS,
  type BacklogState,
  type Delivery,
  type DeliveryLedger,
  type InboundOutcome,
  type MessagingRecoveryReport,
  type PlatformPrompt,
  type RecoverOptions,
  type ReplyRecord,
  type StoredBacklogItem,
  type TurnEnd,
} from '../../domain/ports/delivery-ledger.js';
import { tx } from './actions-common.js';
import { CommitGroup } from './commit-group.js';
import type { SqliteDatabase } from './database.js';
import { clearResumePending, markerIsCurrent, markResumePending, suspendSession } from './entry-actions.js';
import { appendInTransaction } from './transcript-actions.js';
import * as backlog from './ops/backlog.js';
import * as ledger from './ops/deliveries.js';
import * as inbound from './ops/inbound.js';
import { loadVisibleMessages } from './ops/messages.js';
import { addRouteUsage, readRoute } from './ops/routes.js';
import { recordTurnCost } from './ops/turn-costs.js';
import { endedTurnCost } from '../rows/turn-costs.js';
import * as markers from './ops/turn-markers.js';
import { eventFromJson, eventToJson, toDelivery } from '../rows/deliveries.js';
import type { TurnMarker } from '../rows/turn-markers.js';
import { resumedStepRecords } from '../rows/turn-step-records.js';

const CLEAN_SHUTDOWN = 'clean_shutdown';

function settle<T>(fn: () => T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

/** Test-only hook points inside transactions (tests arm them to fail a commit from within). */
export interface LedgerFaults {
  hit(point: 'startTurn.transaction' | 'endTurn.transaction', sessionKey: string): void;
}

export class SqliteDeliveryLedger implements DeliveryLedger {
  /** The connection's group commit, shared with every other store on it. */
  readonly group: CommitGroup;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly faults: LedgerFaults | null = null,
  ) {
    this.group = CommitGroup.of(db);
  }

  startTurn(
    sessionKey: string,
    taken: InboundRef | null,
    options: {
      now?: Date;
      backlogItem?: string | null;
      input?: { sessionId: string; message: TranscriptMessage };
      turnId?: string;
    } = {},
  ): Promise<void> {
    const { backlogItem, input } = options;
    return this.group.run(() => {
      const now = options.now ?? new Date();
      const entry = readRoute(this.db, sessionKey);
      if (entry === null) throw new NotFoundError(`no session on key ${JSON.stringify(sessionKey)}`);
      markers.putTurnMarker(this.db, sessionKey, entry.session_id, now, options.turnId ?? null);
      if (taken !== null) inbound.insertTaken(this.db, taken, sessionKey, now, 'turn');
      if (backlogItem != null) backlog.deleteBacklogItem(this.db, backlogItem);
      this.faults?.hit('startTurn.transaction', sessionKey);
      if (input !== undefined) appendInTransaction(this.db, input.sessionId, input.message, now);
    });
  }

  markToolStarted(sessionKey: string, turnId: string, callId: string): Promise<void> {
    return this.group.run(() => markers.setToolStarted(this.db, sessionKey, turnId, callId));
  }

  recordToolResult(
    sessionKey: string,
    turnId: string,
    sessionId: string,
    messages: readonly TranscriptMessage[],
  ): Promise<void> {
    return this.group.run(() => {
      appendInTransaction(this.db, sessionId, messages, new Date());
      markers.setToolStarted(this.db, sessionKey, turnId, null);
      markers.setTurnPrompt(this.db, sessionKey, turnId, null);
    });
  }

  recordTurnPrompt(sessionKey: string, turnId: string, prompt: PlatformPrompt | null): Promise<void> {
    const json = prompt === null ? null : JSON.stringify(prompt);
    return this.group.run(() => markers.setTurnPrompt(this.db, sessionKey, turnId, json));
  }

  recordPromptShown(sessionKey: string, turnId: string, promptId: string, messageId: string): Promise<void> {
    return this.group.run(() => markers.setPromptMessage(this.db, sessionKey, turnId, promptId, messageId));
  }

  takeInbound(
    taken: InboundRef,
    sessionKey: string,
    options: { now?: Date; outcome?: 'command' | 'answer' } = {},
  ): Promise<void> {
    return settle(() =>
      tx(this.db, () =>
        inbound.insertTaken(
          this.db,
          taken,
          sessionKey,
          options.now ?? new Date(),
          options.outcome ?? 'command',
        ),
      ),
    );
  }

  isInboundTaken(taken: InboundRef): Promise<boolean> {
    return settle(() => inbound.isTaken(this.db, taken));
  }

  inboundOutcome(taken: InboundRef): Promise<InboundOutcome | null> {
    return settle(() => inbound.readOutcome(this.db, taken));
  }

  saveBacklog(sessionKey: string, state: BacklogState, options: { now?: Date } = {}): Promise<void> {
    const now = options.now ?? new Date();
    return settle(() =>
      tx(this.db, () => {
        backlog.replaceBacklog(
          this.db,
          sessionKey,
          state.starting,
          state.waiting.map((item) => ({
            item_id: item.itemId,
            kind: item.kind,
            event: eventToJson(item.event),
          })),
        );
        for (const item of state.waiting) {
          if (item.inbound !== null) inbound.insertTaken(this.db, item.inbound, sessionKey, now, 'waiting');
        }
        for (const { inbound: ref, outcome } of state.settled) {
          inbound.insertTaken(this.db, ref, sessionKey, now, outcome);
        }
      }),
    );
  }

  applySteers(
    sessionKey: string,
    sessionId: string,
    steers: readonly { readonly itemId: string | null; readonly inbound: InboundRef | null }[],
    messages: readonly TranscriptMessage[],
    options: { now?: Date } = {},
  ): Promise<void> {
    return this.group.run(() => {
      const now = options.now ?? new Date();
      appendInTransaction(this.db, sessionId, messages, now);
      for (const steer of steers) {
        if (steer.itemId !== null) backlog.deleteBacklogItem(this.db, steer.itemId);
        if (steer.inbound !== null) inbound.insertTaken(this.db, steer.inbound, sessionKey, now, 'turn');
      }
    });
  }

  listBacklog(): Promise<StoredBacklogItem[]> {
    return settle(() =>
      backlog.listBacklog(this.db).map((row) => ({
        sessionKey: row.session_key,
        itemId: row.item_id,
        kind: row.kind,
        event: eventFromJson(row.event),
      })),
    );
  }

  recordReply(record: ReplyRecord, options: { now?: Date } = {}): Promise<Delivery> {
    return this.group.run(() => this.insertReply(record, options.now ?? new Date()));
  }

  endTurn(
    sessionKey: string,
    end: TurnEnd,
    reply: ReplyRecord | null,
    options: { now?: Date } = {},
  ): Promise<Delivery | null> {
    return this.group.run(() => {
      const now = options.now ?? new Date();
      if (end.messages.length > 0) appendInTransaction(this.db, end.sessionId, end.messages, now);
      if (end.usage !== null) {
        addRouteUsage(this.db, sessionKey, end.usage);
        const record = endedTurnCost(sessionKey, end, now);
        if (record) recordTurnCost(this.db, record);
      }
      if (end.clearResumePending) clearResumePending(this.db, sessionKey);
      if (end.endStreak) ledger.deleteStreak(this.db, sessionKey);
      this.faults?.hit('endTurn.transaction', sessionKey);
      if (reply === null) {
        markers.deleteTurnMarker(this.db, sessionKey);
        return null;
      }
      return this.insertReply(reply, now);
    });
  }

  /**
   * REC-4/5: the chat of a suspended or stale conversation is told, through the ledger like any reply, so the
   * notice is sent once however the start-up goes. A key with no known origin has no chat to tell.
   */
  private oweNotice(sessionKey: string, tag: string, text: string, now: Date): void {
    const entry = readRoute(this.db, sessionKey);
    const origin = entry?.origin;
    if (!entry || !origin) return;
    ledger.insertDelivery(
      this.db,
      {
        turn_id: `${NOTICE_PREFIX}${tag}:${sessionKey}:${entry.session_id}`,
        session_key: sessionKey,
        session_id: entry.session_id,
        platform: origin.platform,
        chat_id: origin.chat_id,
        thread_id: origin.thread_id,
        reply_to: null,
        text,
        silent: false,
      },
      now,
    );
  }

  /** The reply's row (idempotent per turn) and the end of its key's in-flight marker. */
  private insertReply(record: ReplyRecord, now: Date): Delivery {
    const id = ledger.insertDelivery(
      this.db,
      {
        turn_id: record.turnId,
        session_key: record.sessionKey,
        session_id: record.sessionId,
        platform: record.target.platform,
        chat_id: record.target.chat_id,
        thread_id: record.target.thread_id,
        reply_to: record.target.reply_to,
        text: record.text,
        silent: record.silent,
      },
      now,
    );
    markers.deleteTurnMarker(this.db, record.sessionKey);
    return toDelivery(ledger.readDelivery(this.db, id)!);
  }

  markDelivered(deliveryId: number, options: { now?: Date } = {}): Promise<boolean> {
    return this.group.run(() => ledger.markDelivered(this.db, deliveryId, options.now ?? new Date()));
  }

  readDelivery(deliveryId: number): Promise<Delivery | null> {
    return settle(() => {
      const row = ledger.readDelivery(this.db, deliveryId);
      return row === null ? null : toDelivery(row);
    });
  }

  listUndelivered(): Promise<Delivery[]> {
    return settle(() => ledger.listUndelivered(this.db).map(toDelivery));
  }

  writeCleanShutdown(options: { now?: Date } = {}): Promise<void> {
    return settle(() =>
      ledger.writeState(this.db, CLEAN_SHUTDOWN, (options.now ?? new Date()).toISOString()),
    );
  }

  endStreak(sessionKey: string): Promise<void> {
    return this.group.run(() => ledger.deleteStreak(this.db, sessionKey));
  }

  recover(options: RecoverOptions): Promise<MessagingRecoveryReport> {
    const now = options.now ?? new Date();
    return settle(() =>
      tx(this.db, () => {
        const cleanShutdown = ledger.readState(this.db, CLEAN_SHUTDOWN) !== null;
        ledger.deleteState(this.db, CLEAN_SHUTDOWN);
        const stepRows = cleanShutdown
          ? []
          : markers
              .listTurnMarkers(this.db)
              .flatMap((m) => markers.readTurnSteps(this.db, m.session_key) ?? []);
        const facts: MarkerFact[] = cleanShutdown
          ? []
          : markers.listTurnMarkers(this.db).map((marker) => ({
              session_key: marker.session_key,
              started_at_epoch: marker.started_at_epoch,
              replyPersisted: this.adoptPersistedReply(marker, now),
              moved: !markerIsCurrent(readRoute(this.db, marker.session_key), marker),
            }));
        const stuckAfter = options.stuckAfter ?? STUCK_LOOP_RESTARTS;
        const plan = planRecovery({
          cleanShutdown,
          nowEpoch: Math.floor(now.getTime() / 1000),
          maxAgeSeconds: options.maxAgeSeconds,
          ...(options.freshnessSeconds === undefined ? {} : { freshnessSeconds: options.freshnessSeconds }),
          markers: facts,
          streaks: ledger.readStreaks(this.db),
          stuckAfter,
        });
        for (const key of plan.suspend) {
          suspendSession(this.db, key);
          this.oweNotice(key, 'suspended', suspendedNotice(stuckAfter), now);
        }
        // REC-4: too old to continue. The notice id names the turn's start, so a later stale turn
        // in the same conversation is told again, and this one once.
        for (const marker of plan.stale) {
          this.oweNotice(marker.session_key, `stale:${marker.started_at_epoch}`, STALE_NOTICE, now);
        }
        for (const key of plan.resume) markResumePending(this.db, key, 'restart_interrupted', { now });
        ledger.replaceStreaks(this.db, plan.streaks);
        markers.deleteAllTurnMarkers(this.db);
        inbound.pruneTaken(this.db, Math.floor(now.getTime() / 1000) - INBOUND_RETENTION_SECONDS);
        return {
          cleanShutdown,
          resumed: plan.resume,
          suspended: plan.suspend,
          settled: plan.settled,
          stale: plan.stale.map((m) => m.session_key),
          steps: resumedStepRecords(stepRows, plan.resume, plan.streaks),
        };
      }),
    );
  }

  /**
   * Whether a marked turn's reply survived: on the ledger already, or as the final assistant
   * message of the transcript (stored by the runner, the process died before the ledger write).
   * The latter is put on the ledger here, flagged recovered, so the sweep delivers it once.
   */
  private adoptPersistedReply(marker: TurnMarker, now: Date): boolean {
    // Epoch seconds narrow the search; milliseconds decide, so a reply of the previous turn recorded
    // in the same second as this marker is not mistaken for this turn's.
    const startMs =
      markers.readTurnMarkerStartMs(this.db, marker.session_key) ?? marker.started_at_epoch * 1000;
    const rows = ledger
      .listDeliveriesSince(this.db, marker.session_key, marker.started_at_epoch)
      .filter((row) => Date.parse(row.recorded_at) >= startMs);
    if (rows.length > 0) {
      for (const row of rows) if (row.delivered_at === null) ledger.markRecovered(this.db, row.delivery_id);
      return true;
    }
    const entry = readRoute(this.db, marker.session_key);
    if (entry === null || entry.origin === null || entry.session_id !== marker.session_id) return false;
    const last = loadVisibleMessages(this.db, marker.session_id).at(-1);
    if (last === undefined || last.role !== 'assistant' || (last.tool_calls?.length ?? 0) > 0) return false;
    if (Date.parse(last.timestamp) < startMs) return false;
    const id = ledger.insertDelivery(
      this.db,
      {
        turn_id: `recovered:${marker.session_id}:${last.id}`,
        session_key: marker.session_key,
        session_id: marker.session_id,
        platform: entry.origin.platform,
        chat_id: entry.origin.chat_id,
        thread_id: entry.origin.thread_id,
        reply_to: null,
        text: last.content ?? '',
        silent: isSilentReply(last.content),
      },
      now,
    );
    ledger.markRecovered(this.db, id);
    return true;
  }
}
