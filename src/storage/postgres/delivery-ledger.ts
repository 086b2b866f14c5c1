/**
 * The delivery ledger on PostgreSQL, sharing the session store's connection (one schema, one
 * transaction). The operations on a turn's path (startTurn, recordReply, endTurn, markDelivered,
 * endStreak) go through the connection's group commit, as on SQLite; each method is one transaction.
 */
import {
  isSilentReply,
  NOTICE_PREFIX,
  planRecovery,
  STUCK_LOOP_RESTARTS,
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
import { eventFromJson, eventToJson, toDelivery } from '../rows/deliveries.js';
import type { TurnMarker, TurnStepRow } from '../rows/turn-markers.js';
import { resumedStepRecords } from '../rows/turn-step-records.js';
import type { BotFence } from '../../domain/ports/cluster-store.js';
import { PgCommitGroup } from './commit-group.js';
import { checkBotFence } from './ops/leases.js';
import type { PgDatabase, Sql } from './database.js';
import { clearResumePending, markerIsCurrent, markResumePending, suspendSession } from './entry-actions.js';
import * as backlog from './ops/backlog.js';
import * as ledger from './ops/deliveries.js';
import * as inbound from './ops/inbound.js';
import { loadVisibleMessages } from './ops/messages.js';
import { addRouteUsage, readRoute } from './ops/routes.js';
import { recordTurnCost } from './ops/turn-costs.js';
import { endedTurnCost } from '../rows/turn-costs.js';
import * as markers from './ops/turn-markers.js';
import { appendInTransaction } from './transcript-actions.js';

const CLEAN_SHUTDOWN = 'clean_shutdown';

export class PostgresDeliveryLedger implements DeliveryLedger {
  /** The connection's group commit, shared with every other store on it. */
  readonly group: PgCommitGroup;

  /** In a cluster (SCL-1): the bot leases every write is fenced by (docs/cluster.md). */
  private bots: BotFence | null = null;

  constructor(private readonly db: PgDatabase) {
    this.group = PgCommitGroup.of(db);
  }

  /**
   * From now on every write (turn markers, inbound outcomes, backlog, parked events, deliveries
   * and their settlement, the clean-shutdown marker) commits only while this instance holds every
   * bot lease under the token it took it with; otherwise it is refused with BotLeaseLost.
   */
  fenceByBots(fence: BotFence): void {
    this.bots = fence;
  }

  /** A write on the turn path: in the connection's group commit, fenced. */
  private write<T>(op: (sql: Sql) => Promise<T>): Promise<T> {
    return this.group.run(async (sql) => {
      await checkBotFence(sql, this.bots);
      return op(sql);
    });
  }

  /** A write in a transaction of its own, fenced. */
  private writeAlone<T>(op: (sql: Sql) => Promise<T>): Promise<T> {
    return this.db.transaction(async (sql) => {
      await checkBotFence(sql, this.bots);
      return op(sql);
    });
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
    return this.write(async (sql) => {
      const now = options.now ?? new Date();
      const entry = await readRoute(sql, sessionKey);
      if (entry === null) throw new NotFoundError(`no session on key ${JSON.stringify(sessionKey)}`);
      await markers.putTurnMarker(sql, sessionKey, entry.session_id, now, options.turnId ?? null);
      if (taken !== null) await inbound.insertTaken(sql, taken, sessionKey, now, 'turn');
      if (backlogItem != null) await backlog.deleteBacklogItem(sql, backlogItem);
      if (input !== undefined) await appendInTransaction(this.db, sql, input.sessionId, input.message, now);
    });
  }

  applySteers(
    sessionKey: string,
    sessionId: string,
    steers: readonly { readonly itemId: string | null; readonly inbound: InboundRef | null }[],
    messages: readonly TranscriptMessage[],
    options: { now?: Date } = {},
  ): Promise<void> {
    return this.write(async (sql) => {
      const now = options.now ?? new Date();
      await appendInTransaction(this.db, sql, sessionId, messages, now);
      for (const steer of steers) {
        if (steer.itemId !== null) await backlog.deleteBacklogItem(sql, steer.itemId);
        if (steer.inbound !== null) await inbound.insertTaken(sql, steer.inbound, sessionKey, now, 'turn');
      }
    });
  }

  markToolStarted(sessionKey: string, turnId: string, callId: string): Promise<void> {
    return this.write((sql) => markers.setToolStarted(sql, sessionKey, turnId, callId));
  }

  recordToolResult(
    sessionKey: string,
    turnId: string,
    sessionId: string,
    messages: readonly TranscriptMessage[],
  ): Promise<void> {
    return this.write(async (sql) => {
      await appendInTransaction(this.db, sql, sessionId, messages, new Date());
      await markers.setToolStarted(sql, sessionKey, turnId, null);
      await markers.setTurnPrompt(sql, sessionKey, turnId, null);
    });
  }

  recordTurnPrompt(sessionKey: string, turnId: string, prompt: PlatformPrompt | null): Promise<void> {
    const json = prompt === null ? null : JSON.stringify(prompt);
    return this.write((sql) => markers.setTurnPrompt(sql, sessionKey, turnId, json));
  }

  recordPromptShown(sessionKey: string, turnId: string, promptId: string, messageId: string): Promise<void> {
    return this.write((sql) => markers.setPromptMessage(sql, sessionKey, turnId, promptId, messageId));
  }

  takeInbound(
    taken: InboundRef,
    sessionKey: string,
    options: { now?: Date; outcome?: 'command' | 'answer' } = {},
  ): Promise<void> {
    return this.writeAlone((sql) =>
      inbound.insertTaken(sql, taken, sessionKey, options.now ?? new Date(), options.outcome ?? 'command'),
    );
  }

  async isInboundTaken(taken: InboundRef): Promise<boolean> {
    return (await this.inboundOutcome(taken)) !== null;
  }

  inboundOutcome(taken: InboundRef): Promise<InboundOutcome | null> {
    return this.db.exclusive((sql) => inbound.readOutcome(sql, taken));
  }

  saveBacklog(sessionKey: string, state: BacklogState, options: { now?: Date } = {}): Promise<void> {
    const now = options.now ?? new Date();
    return this.writeAlone(async (sql) => {
      await backlog.replaceBacklog(
        sql,
        sessionKey,
        state.starting,
        state.waiting.map((item) => ({
          item_id: item.itemId,
          kind: item.kind,
          event: eventToJson(item.event),
        })),
      );
      for (const item of state.waiting) {
        if (item.inbound !== null) await inbound.insertTaken(sql, item.inbound, sessionKey, now, 'waiting');
      }
      for (const { inbound: ref, outcome } of state.settled) {
        await inbound.insertTaken(sql, ref, sessionKey, now, outcome);
      }
    });
  }

  async listBacklog(): Promise<StoredBacklogItem[]> {
    const rows = await this.db.exclusive((sql) => backlog.listBacklog(sql));
    return rows.map((row) => ({
      sessionKey: row.session_key,
      itemId: row.item_id,
      kind: row.kind,
      event: eventFromJson(row.event),
    }));
  }

  recordReply(record: ReplyRecord, options: { now?: Date } = {}): Promise<Delivery> {
    return this.write((sql) => this.insertReply(sql, record, options.now ?? new Date()));
  }

  endTurn(sessionKey: string, end: TurnEnd, reply: ReplyRecord | null, options: { now?: Date } = {}) {
    return this.write(async (sql): Promise<Delivery | null> => {
      const now = options.now ?? new Date();
      if (end.messages.length > 0) await appendInTransaction(this.db, sql, end.sessionId, end.messages, now);
      if (end.usage !== null) {
        await addRouteUsage(sql, sessionKey, end.usage);
        const record = endedTurnCost(sessionKey, end, now);
        if (record) await recordTurnCost(sql, record);
      }
      if (end.clearResumePending) await clearResumePending(sql, sessionKey);
      if (end.endStreak) await ledger.deleteStreak(sql, sessionKey);
      if (reply === null) {
        await markers.deleteTurnMarker(sql, sessionKey);
        return null;
      }
      return this.insertReply(sql, reply, now);
    });
  }

  /** REC-4/5: a chat is told of a suspended or stale conversation, through the ledger like any reply. */
  private async oweNotice(sql: Sql, sessionKey: string, tag: string, text: string, now: Date): Promise<void> {
    const entry = await readRoute(sql, sessionKey);
    const origin = entry?.origin;
    if (!entry || !origin) return;
    await ledger.insertDelivery(
      sql,
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
  private async insertReply(sql: Sql, record: ReplyRecord, now: Date): Promise<Delivery> {
    const id = await ledger.insertDelivery(
      sql,
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
    await markers.deleteTurnMarker(sql, record.sessionKey);
    return toDelivery((await ledger.readDelivery(sql, id))!);
  }

  markDelivered(deliveryId: number, options: { now?: Date } = {}): Promise<boolean> {
    return this.write((sql) => ledger.markDelivered(sql, deliveryId, options.now ?? new Date()));
  }

  async readDelivery(deliveryId: number): Promise<Delivery | null> {
    const row = await this.db.exclusive((sql) => ledger.readDelivery(sql, deliveryId));
    return row === null ? null : toDelivery(row);
  }

  async listUndelivered(): Promise<Delivery[]> {
    return (await this.db.exclusive((sql) => ledger.listUndelivered(sql))).map(toDelivery);
  }

  writeCleanShutdown(options: { now?: Date } = {}): Promise<void> {
    return this.writeAlone((sql) =>
      ledger.writeState(sql, CLEAN_SHUTDOWN, (options.now ?? new Date()).toISOString()),
    );
  }

  endStreak(sessionKey: string): Promise<void> {
    return this.write((sql) => ledger.deleteStreak(sql, sessionKey));
  }

  recover(options: RecoverOptions): Promise<MessagingRecoveryReport> {
    const now = options.now ?? new Date();
    return this.writeAlone(async (sql) => {
      const cleanShutdown = (await ledger.readState(sql, CLEAN_SHUTDOWN)) !== null;
      await ledger.deleteState(sql, CLEAN_SHUTDOWN);
      const facts: MarkerFact[] = [];
      const rows: TurnStepRow[] = [];
      if (!cleanShutdown) {
        for (const marker of await markers.listTurnMarkers(sql)) {
          const row = await markers.readTurnSteps(sql, marker.session_key);
          if (row !== null) rows.push(row);
          facts.push({
            session_key: marker.session_key,
            started_at_epoch: marker.started_at_epoch,
            replyPersisted: await this.adoptPersistedReply(sql, marker, now),
            moved: !markerIsCurrent(await readRoute(sql, marker.session_key), marker),
          });
        }
      }
      const stuckAfter = options.stuckAfter ?? STUCK_LOOP_RESTARTS;
      const plan = planRecovery({
        cleanShutdown,
        nowEpoch: Math.floor(now.getTime() / 1000),
        maxAgeSeconds: options.maxAgeSeconds,
        ...(options.freshnessSeconds === undefined ? {} : { freshnessSeconds: options.freshnessSeconds }),
        markers: facts,
        streaks: await ledger.readStreaks(sql),
        stuckAfter,
      });
      for (const key of plan.suspend) {
        await suspendSession(sql, key);
        await this.oweNotice(sql, key, 'suspended', suspendedNotice(stuckAfter), now);
      }
      // REC-4: too old to continue. The notice id names the turn's start, so a later stale turn
      // in the same conversation is told again, and this one once.
      for (const marker of plan.stale) {
        await this.oweNotice(sql, marker.session_key, `stale:${marker.started_at_epoch}`, STALE_NOTICE, now);
      }
      for (const key of plan.resume) await markResumePending(sql, key, 'restart_interrupted', { now });
      await ledger.replaceStreaks(sql, plan.streaks);
      await markers.deleteAllTurnMarkers(sql);
      await inbound.pruneTaken(sql, Math.floor(now.getTime() / 1000) - INBOUND_RETENTION_SECONDS);
      return {
        cleanShutdown,
        resumed: plan.resume,
        suspended: plan.suspend,
        settled: plan.settled,
        stale: plan.stale.map((m) => m.session_key),
        steps: resumedStepRecords(rows, plan.resume, plan.streaks),
      };
    });
  }

  /**
   * Whether a marked turn's reply survived: on the ledger already, or as the final assistant message
   * of the transcript (then put on the ledger here, flagged recovered). As on SQLite.
   */
  private async adoptPersistedReply(sql: Sql, marker: TurnMarker, now: Date): Promise<boolean> {
    const startMs =
      (await markers.readTurnMarkerStartMs(sql, marker.session_key)) ?? marker.started_at_epoch * 1000;
    const rows = (await ledger.listDeliveriesSince(sql, marker.session_key, marker.started_at_epoch)).filter(
      (row) => Date.parse(row.recorded_at) >= startMs,
    );
    if (rows.length > 0) {
      for (const row of rows) if (row.delivered_at === null) await ledger.markRecovered(sql, row.delivery_id);
      return true;
    }
    const entry = await readRoute(sql, marker.session_key);
    if (entry === null || entry.origin === null || entry.session_id !== marker.session_id) return false;
    const last = (await loadVisibleMessages(sql, marker.session_id)).at(-1);
    if (last === undefined || last.role !== 'assistant' || (last.tool_calls?.length ?? 0) > 0) return false;
    if (Date.parse(last.timestamp) < startMs) return false;
    const id = await ledger.insertDelivery(
      sql,
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
    await ledger.markRecovered(sql, id);
    return true;
  }
}
