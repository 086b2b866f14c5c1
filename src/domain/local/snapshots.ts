/**
 * Gathers what clients see of a local session — its info, its state and the resume snapshot (LOC-2,
 * LOC-7) — from the store, the receipt gate, the scheduler and the session's hub; views.ts shapes
 * them. The one subtle part is the snapshot's consistency with the live event stream (snapshot()).
 */
import type { AdmissionRow, LocalSessionRow, LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore, StoredMessage } from '../ports/session-store.js';
import { GatewayError } from '../errors.js';
import type { JsonText } from '../json-text.js';
import type { AccessRow } from './access.js';
import type { EventFanOut } from './fan-out.js';
import type { ReceiptGate } from './receipt-gate.js';
import type { TurnScheduler } from './scheduler.js';
import { sessionInfo, sessionSnapshot, sessionState, type SessionState } from './views.js';
import { wholeTranscript, type ReplyOptions } from './whole-transcript.js';

/** How often a snapshot re-reads a transcript that changed while it was read. */
const SNAPSHOT_READS = 5;
/** Cluster mode: how long a snapshot waits for this instance's queued events to commit. */
const SETTLE_MS = 2_000;

export interface SnapshotContext {
  store: LocalSessionStore;
  sessions: SessionStore;
  receipts: ReceiptGate;
  scheduler: TurnScheduler;
  fanOut: EventFanOut;
  /** The session's open prompts, wherever in a cluster its turn runs. */
  pendingPrompts(logicalId: string): Promise<unknown[]>;
  /** Whether the session's agent is live in memory. */
  agentLive(logicalId: string): boolean;
}

type SessionRead = { fresh: LocalSessionRow; unsettled: AdmissionRow[] };

export class SessionSnapshots {
  constructor(private readonly ctx: SnapshotContext) {}

  /**
   * The transcript is read asynchronously while a turn may go on publishing: a message stored and
   * announced during the read could be counted in `last_seq` yet missing from `messages`, and
   * then lost to the viewer. So the read is repeated until no event was published during it.
   */
  async snapshot(
    session: AccessRow,
    messageLimit?: number,
    options: ReplyOptions = {},
  ): Promise<Record<string, unknown>> {
    const { receipts, fanOut, sessions } = this.ctx;
    const receipt = receipts.get(session.logical_id);
    if (!receipt) return await this.of(session, []);
    const hub = await fanOut.followed(session.logical_id);
    if (fanOut.cluster) {
      // What this instance published is committed and shown before the transcript is read, so a
      // message it already stored is not announced again after the snapshot.
      hub.flush();
      await fanOut.cluster.flush(Date.now() + SETTLE_MS);
      await fanOut.cluster.follow(session.logical_id);
    }
    for (let attempt = 1; ; attempt++) {
      const before = hub.lastSeq;
      // The row and the admissions are read before the transcript: a settlement committed between
      // the reads then shows its messages with the admission still pending (read again by a
      // viewer that waits), never settled without its final answer.
      const state = await this.read(session.logical_id);
      const physicalId = receipts.get(session.logical_id)?.current_session_id ?? receipt.current_session_id;
      const page: { messages: StoredMessage[] | JsonText; hasMore: boolean } =
        messageLimit === undefined
          ? { messages: await wholeTranscript(sessions, physicalId, 'public', options), hasMore: false }
          : await sessions.loadTranscriptPage(physicalId, { limit: messageLimit });
      if (hub.lastSeq !== before && attempt < SNAPSHOT_READS) continue;
      // Still moving after the last read: a message shown twice is better than one lost.
      const snapshot = await this.of(session, page.messages, before, state);
      return messageLimit === undefined ? snapshot : { ...snapshot, messages_truncated: page.hasMore };
    }
  }

  /** The snapshot with these messages (all of them for a new session: none). */
  async of(
    session: AccessRow,
    messages: StoredMessage[] | JsonText,
    lastSeq?: number,
    state?: SessionRead,
  ): Promise<Record<string, unknown>> {
    const id = session.logical_id;
    const hub = await this.ctx.fanOut.followed(id);
    const { fresh, unsettled } = state ?? (await this.read(id));
    return sessionSnapshot({
      session: fresh,
      messages,
      unsettled,
      running: this.ctx.scheduler.running(id),
      prompts: await this.ctx.pendingPrompts(id),
      // The stream's epoch in cluster mode (the same on every instance); this epoch otherwise.
      epoch: hub.epoch,
      lastSeq: lastSeq ?? hub.lastSeq,
      info: this.info(fresh),
    });
  }

  info(session: AccessRow): Record<string, unknown> {
    const policy = this.ctx.receipts.get(session.logical_id)?.policy;
    const id = session.logical_id;
    return sessionInfo(session, policy, this.ctx.agentLive(id) || this.ctx.scheduler.running(id) !== null);
  }

  async state(row: LocalSessionRow): Promise<SessionState> {
    const id = row.logical_id;
    const unsettled = await this.ctx.store.unsettled(id);
    return sessionState(row, this.ctx.scheduler.running(id), unsettled);
  }

  /** The session's row (its current execution generation) and its unsettled admissions. */
  private async read(id: string): Promise<SessionRead> {
    const fresh = await this.ctx.store.getLocalSession(id);
    if (!fresh) throw new GatewayError('not_found', `no session ${id}`, { session_id: id });
    return { fresh, unsettled: await this.ctx.store.unsettled(id) };
  }
}
