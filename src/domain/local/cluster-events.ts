/**
 * Events across the instances of a cluster (SPEC SCL-1, docs/cluster.md): the shared stream in the
 * database numbers every event once, and each instance shows its viewers the stream's events under
 * the stream's numbers.
 *
 * - Publishing: a hub's (coalesced) events go to the outbox; one flush at a time appends everything
 *   queued, for all sessions, in one transaction (group commit). The numbered events come back to
 *   the session's hub like anybody else's.
 * - Following: a hub with viewers is *synced*: its numbering was set from the stream's head, and it
 *   reads the rows after its last seq whenever a note (NOTIFY) or its own append says there are
 *   more. Reads of one session never overlap; a read asked for during one runs again after it.
 * - Gaps: numbers the stream no longer holds restart the hub's numbering past them; viewers see a
 *   jump and session.events.since answers snapshot_required. Nothing is skipped silently.
 *
 * Bounds: the outbox keeps at most `maxPending` events per session (beyond that the oldest are
 * dropped and their numbers skipped, a gap); `synced` and the reads in flight follow the hubs, which
 * housekeeping releases.
 */
import type {
  SharedEventStore,
  StoredStreamEvent,
  StreamNote,
  StreamSignals,
} from '../ports/event-stream.js';
import type { ReplayResult } from '../events/event-log.js';
import type { PublicEvent, SessionHub } from './hub.js';

export interface ClusterEventsOptions {
  store: SharedEventStore;
  signals: StreamSignals;
  /** This instance's authority epoch: the epoch of the streams it begins. */
  epoch: number;
  hubs: { find(logicalId: string): SessionHub | undefined; of(logicalId: string): SessionHub };
  /** Most events one read takes, and most events queued per session in the outbox. */
  maxEvents: number;
  onError: (error: unknown, context: string) => void;
  /** First delay before a failed append is tried again (ms); it doubles up to 5 s. */
  retryMs?: number;
}

const MAX_RETRY_MS = 5_000;

interface Pending {
  events: PublicEvent[];
  skipped: number;
}

export class ClusterEvents {
  private outbox = new Map<string, Pending>();
  private flushing: Promise<void> | null = null;
  private readonly synced = new Set<string>();
  private readonly reads = new Map<string, { again: boolean; done: Promise<void> }>();
  private readonly unsubscribe: (() => void)[];
  private stopped = false;
  private batchWaiters: (() => void)[] = [];
  /** Appends failed in a row: only the first of a streak is reported, and retries back off. */
  private failures = 0;
  /** Events ever queued, and those committed or dropped since: `flush` waits on these counts. */
  private queued = 0;
  private settled = 0;

  constructor(private readonly options: ClusterEventsOptions) {
    this.unsubscribe = [
      options.signals.subscribe((note) => this.noted(note)),
      options.signals.onReconnect(() => {
        for (const id of this.synced) void this.pull(id);
      }),
    ];
  }

  /** Events queued and not yet committed (tests, describe). */
  get pendingEvents(): number {
    let n = 0;
    for (const p of this.outbox.values()) n += p.events.length;
    return n;
  }

  get syncedCount(): number {
    return this.synced.size;
  }

  /** The hub's sink in cluster mode (HubOptions.outbox). */
  enqueue(logicalId: string, event: PublicEvent): void {
    let pending = this.outbox.get(logicalId);
    if (!pending) {
      pending = { events: [], skipped: 0 };
      this.outbox.set(logicalId, pending);
    }
    pending.events.push(event);
    this.queued++;
    if (pending.events.length > this.options.maxEvents) {
      pending.events.shift();
      pending.skipped++;
      this.settled++;
    }
    this.flushSoon();
  }

  /**
   * The session's hub, synced with the stream (begun here if the session has none) and caught up
   * with what the stream held when this was called.
   */
  async follow(logicalId: string): Promise<SessionHub> {
    for (;;) {
      let hub = this.options.hubs.of(logicalId);
      if (!this.synced.has(logicalId)) {
        const head = await this.options.store.open(logicalId, this.options.epoch);
        hub = this.options.hubs.of(logicalId);
        if (!this.synced.has(logicalId)) {
          hub.restart(head.epoch, head.last_seq);
          this.synced.add(logicalId);
        }
      }
      await this.pull(logicalId);
      // Released by housekeeping meanwhile (no viewer yet): follow the hub that replaced it.
      if (this.options.hubs.find(logicalId) === hub && this.synced.has(logicalId)) return hub;
    }
  }

  /** session.events.since across instances: the stream's events after the cursor, up to the hub's. */
  async since(logicalId: string, epoch: number, afterSeq: number): Promise<ReplayResult<PublicEvent>> {
    const hub = await this.follow(logicalId);
    const upTo = hub.receivedSeq;
    const stop = (reason: 'gap' | 'epoch', oldest: number | null) =>
      ({ kind: 'snapshot_required', last_seq: upTo, oldest_seq: oldest, reason }) as const;
    if (epoch !== hub.epoch) return stop('epoch', null);
    if (afterSeq > upTo) return stop('gap', null);
    const { head, events } = await this.options.store.read(logicalId, afterSeq, this.options.maxEvents);
    const oldest = head?.oldest_seq ?? null;
    if (head === null || head.epoch !== epoch) return stop('epoch', oldest);
    const wanted = events.filter((e) => e.seq <= upTo);
    if (afterSeq < upTo && wanted[0]?.seq !== afterSeq + 1) return stop('gap', oldest);
    const out = [];
    for (const row of wanted) {
      // A number without its row (dropped by a publisher) is a gap too.
      if (row.seq !== afterSeq + 1 + out.length) return stop('gap', oldest);
      out.push({ seq: row.seq, epoch, event: decode(row) });
    }
    return { kind: 'events', events: out, last_seq: afterSeq + out.length };
  }

  /** Housekeeping released these hubs: they are no longer followed. */
  released(ids: readonly string[]): void {
    for (const id of ids) this.synced.delete(id);
  }

  /**
   * Waits until the events queued before this call are committed (or dropped), or until `deadline`
   * (ms since the epoch) passes; events queued meanwhile (a turn streaming on) are not waited for.
   */
  async flush(deadline = Number.POSITIVE_INFINITY): Promise<void> {
    const target = this.queued;
    while (this.settled < target && this.flushing && Date.now() < deadline) {
      const left = deadline - Date.now();
      await Promise.race([
        this.batchDone(),
        ...(Number.isFinite(left) ? [new Promise((r) => setTimeout(r, left).unref())] : []),
      ]);
    }
  }

  /** Resolves when the batch now committing (or the retry now waiting) ends. */
  private batchDone(): Promise<void> {
    return new Promise((resolve) => this.batchWaiters.push(resolve));
  }

  stop(): void {
    this.stopped = true;
    for (const off of this.unsubscribe) off();
  }

  private noted(note: StreamNote): void {
    const hub = this.options.hubs.find(note.logical_id);
    if (!hub || !this.synced.has(note.logical_id)) return;
    if (note.epoch === hub.epoch && note.seq <= hub.receivedSeq) return;
    void this.pull(note.logical_id);
  }

  private flushSoon(): void {
    if (this.flushing || this.stopped) return;
    this.flushing = (async () => {
      // Everything queued while a batch commits goes in the next one.
      await Promise.resolve();
      while (this.outbox.size > 0 && !this.stopped) {
        const ok = await this.flushOnce();
        if (!ok) {
          const delay = Math.min((this.options.retryMs ?? 200) * 2 ** (this.failures - 1), MAX_RETRY_MS);
          await new Promise((r) => setTimeout(r, delay));
        }
        this.wakeWaiters();
      }
      this.flushing = null;
      this.wakeWaiters();
    })();
  }

  private wakeWaiters(): void {
    const waiters = this.batchWaiters;
    this.batchWaiters = [];
    for (const wake of waiters) wake();
  }

  private async flushOnce(): Promise<boolean> {
    const batch = this.outbox;
    this.outbox = new Map();
    const runs = [...batch].map(([logical_id, p]) => ({
      logical_id,
      events: p.events.map((e) => JSON.stringify(e)),
      skipped: p.skipped,
    }));
    let appended;
    try {
      appended = await this.options.store.append(runs, this.options.epoch);
    } catch (error) {
      if (++this.failures === 1) {
        this.options.onError(error, 'appending session events to the shared stream (retrying)');
      }
      // Back in front of what was queued meanwhile, within the bound.
      for (const [id, later] of this.outbox) {
        const earlier = batch.get(id);
        if (earlier) {
          earlier.events.push(...later.events);
          earlier.skipped += later.skipped;
        } else batch.set(id, later);
      }
      for (const p of batch.values()) {
        const over = p.events.length - this.options.maxEvents;
        if (over > 0) {
          p.events.splice(0, over);
          p.skipped += over;
          this.settled += over;
        }
      }
      this.outbox = batch;
      return false;
    }
    this.failures = 0;
    for (const p of batch.values()) this.settled += p.events.length;
    for (const run of appended) {
      const events = batch.get(run.logical_id)!.events;
      this.deliver(run.logical_id, run.epoch, run.first_seq, events);
    }
    return true;
  }

  /** Our own committed events, shown at once when they are next; else the hub reads the stream. */
  private deliver(logicalId: string, epoch: number, firstSeq: number, events: PublicEvent[]): void {
    const hub = this.options.hubs.find(logicalId);
    if (!hub || !this.synced.has(logicalId)) return;
    for (let i = 0; i < events.length; i++) {
      if (hub.receive(epoch, firstSeq + i, events[i]!) === 'gap') {
        void this.pull(logicalId);
        return;
      }
    }
  }

  /** Reads the stream after the hub's last seq until it has caught up; one read per session at once. */
  private pull(logicalId: string): Promise<void> {
    const running = this.reads.get(logicalId);
    if (running) {
      running.again = true;
      return running.done;
    }
    const entry = { again: true, done: Promise.resolve() };
    entry.done = (async () => {
      try {
        while (entry.again && !this.stopped) {
          entry.again = false;
          await this.catchUp(logicalId);
        }
      } catch (error) {
        this.options.onError(error, `reading the shared event stream of ${logicalId}`);
      } finally {
        this.reads.delete(logicalId);
      }
    })();
    this.reads.set(logicalId, entry);
    return entry.done;
  }

  private async catchUp(logicalId: string): Promise<void> {
    for (;;) {
      const hub = this.options.hubs.find(logicalId);
      if (!hub || !this.synced.has(logicalId)) return;
      const { head, events } = await this.options.store.read(
        logicalId,
        hub.receivedSeq,
        this.options.maxEvents,
      );
      if (!head || (head.epoch === hub.epoch && head.last_seq <= hub.receivedSeq)) return;
      if (events.length === 0) {
        // The stream no longer holds anything after our last seq: number on past the hole.
        hub.restart(head.epoch, head.last_seq);
        return;
      }
      for (const row of events) {
        const event = decode(row);
        if (hub.receive(head.epoch, row.seq, event) !== 'gap') continue;
        hub.restart(head.epoch, row.seq - 1);
        hub.receive(head.epoch, row.seq, event);
      }
    }
  }
}

function decode(row: StoredStreamEvent): PublicEvent {
  return JSON.parse(row.event) as PublicEvent;
}
