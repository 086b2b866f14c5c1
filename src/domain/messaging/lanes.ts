/**
 * The gateway's lanes (one per session key with work) and the durable mirror of what waits in
 * them: the inbound backlog (migration 005).
 *
 * A lane exists while it has work. Once it is idle, nothing waits, no command is being carried
 * out on it and its backlog rows are known to be gone, it is freed; the next event of the key
 * makes a new one. Memory follows the chats with work, not every chat ever seen. Nothing a lane
 * holds outlives that point: the conversation is in the store.
 *
 * The backlog: a queue lives in memory, but its platform was told long ago that the waiting
 * messages arrived (Telegram confirms an update with the next poll). Without a record a restart,
 * graceful or not, would lose them. So every change to what waits is written before the gateway
 * moves on:
 *
 * - an event that has to wait gets a row, and its platform message is taken (`waiting`) with it,
 *   so a redelivery is dropped while the row runs it after a restart;
 * - the row of a promoted event stays until its turn takes it, in the transaction that sets the
 *   turn's in-flight marker (DeliveryLedger.startTurn): a crash leaves one of the two, never both;
 * - an event that leaves the queue without a turn is settled: `collapsed` (a newer follow-up took
 *   its place, QUE-1) or `dropped` (/stop, /new, /reset);
 * - at start-up every row is put back on its lane, in order (restore); the rows of events parked
 *   during a start-up recovery (parking.ts) are not a lane's and are left to the gateway.
 *
 * A restart auto-continue is never written: resume_pending brings it back at every start. Writes
 * happen only when what waits changed, so a message that starts at once costs nothing here.
 */
import { randomBytes } from 'node:crypto';
import type { InboundRef, MessageEvent } from './adapter.js';
import * as queue from './queue.js';
import type { BacklogItem, DeliveryLedger } from '../ports/delivery-ledger.js';
import type { Lane, SavedItem } from './chat-commands.js';
import { PARKED_KEY } from './parking.js';

export type Removal = 'collapsed' | 'dropped';

export class Lanes {
  private readonly lanes = new Map<string, Lane>();
  private readonly ids = new WeakMap<MessageEvent, string>();
  private readonly derived = new WeakSet<MessageEvent>();

  constructor(
    private readonly ledger: DeliveryLedger,
    private readonly refOf: (event: MessageEvent) => InboundRef | null,
  ) {}

  get size(): number {
    return this.lanes.size;
  }

  get(key: string): Lane | undefined {
    return this.lanes.get(key);
  }

  values(): IterableIterator<Lane> {
    return this.lanes.values();
  }

  /** The key's lane, made if it has none. */
  open(key: string): Lane {
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { key, state: queue.emptyQueue(), running: null, saved: [], commands: 0 };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  /** The event is derived again at every start (a restart auto-continue): it is never written. */
  markDerived(event: MessageEvent): void {
    this.derived.add(event);
  }

  /** The lane's row of `event`, when it has one: passed to the turn, which takes it at start. */
  rowOf(lane: Lane, event: MessageEvent): string | null {
    const id = this.ids.get(event);
    return id !== undefined && lane.saved?.some((s) => s.itemId === id) === true ? id : null;
  }

  /** The turn on `key` took its row `itemId` (startTurn deleted it). */
  taken(key: string, itemId: string): void {
    const lane = this.lanes.get(key);
    if (lane !== undefined) lane.saved = lane.saved?.filter((s) => s.itemId !== itemId) ?? null;
  }

  /**
   * After anything changed what a lane holds: saves what waits, settling what left the queue
   * without a turn as `removedAs`, then frees the lane if it has no work left.
   */
  async changed(lane: Lane, removedAs: Removal): Promise<void> {
    await this.save(lane, removedAs);
    if (
      lane.running === null &&
      lane.commands === 0 &&
      lane.state.mode === 'idle' &&
      queue.queueDepth(lane.state) === 0 &&
      lane.saved?.length === 0 &&
      this.lanes.get(lane.key) === lane
    ) {
      this.lanes.delete(lane.key);
    }
  }

  /**
   * Puts what waited in the queues when the last process ended back on its lanes, in order, with
   * `enqueue` (which may start the first of a lane). Every row is known to its lane before any is
   * enqueued, so the turn of a started one takes its row and the saves after write nothing.
   * Returns how many events came back.
   */
  async restore(enqueue: (lane: Lane, item: queue.QueueItem<MessageEvent>) => void): Promise<number> {
    // Parked events (parking.ts) are no lane's: they are admitted after recovery, as they arrive.
    const stored = (await this.ledger.listBacklog()).filter((item) => item.sessionKey !== PARKED_KEY);
    for (const item of stored) {
      const lane = this.open(item.sessionKey);
      this.ids.set(item.event, item.itemId);
      lane.saved = [
        ...(lane.saved ?? []),
        { itemId: item.itemId, kind: item.kind, inbound: this.refOf(item.event) },
      ];
    }
    for (const item of stored) enqueue(this.open(item.sessionKey), { kind: item.kind, payload: item.event });
    for (const key of new Set(stored.map((item) => item.sessionKey))) {
      const lane = this.lanes.get(key);
      if (lane !== undefined) await this.changed(lane, 'dropped');
    }
    return stored.length;
  }

  /**
   * Writes the lane's rows if what waits changed since the last write. A failed write is not fatal
   * (the event still runs from memory): the lane's rows are then unknown, and the next save
   * rewrites them in full.
   */
  private save(lane: Lane, removedAs: Removal): Promise<void> {
    const starting = lane.running?.backlogItem ?? null;
    const waiting: BacklogItem[] = [];
    const { slot, overflow } = lane.state;
    for (const item of slot === null ? overflow : [slot, ...overflow]) {
      if (this.derived.has(item.payload)) continue;
      const inbound = this.refOf(item.payload);
      waiting.push({ itemId: this.idOf(item.payload), kind: item.kind, event: item.payload, inbound });
    }
    const previous = lane.saved;
    const next: SavedItem[] = [
      ...(previous ?? []).filter((s) => s.itemId === starting),
      ...waiting.map(({ itemId, kind, inbound }) => ({ itemId, kind, inbound })),
    ];
    if (previous !== null && sameRows(previous, next)) return Promise.resolve();
    const kept = new Set(next.map((s) => s.itemId));
    const settled = (previous ?? []).flatMap((s) =>
      kept.has(s.itemId) || s.inbound === null ? [] : [{ inbound: s.inbound, outcome: removedAs }],
    );
    lane.saved = next;
    return this.ledger.saveBacklog(lane.key, { starting, waiting, settled }).catch(() => {
      lane.saved = null;
    });
  }

  private idOf(event: MessageEvent): string {
    let id = this.ids.get(event);
    if (id === undefined) {
      id = `bl_${randomBytes(12).toString('base64url')}`;
      this.ids.set(event, id);
    }
    return id;
  }
}

function sameRows(a: readonly SavedItem[], b: readonly SavedItem[]): boolean {
  return a.length === b.length && a.every((s, i) => s.itemId === b[i]!.itemId && s.kind === b[i]!.kind);
}
