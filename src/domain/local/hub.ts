/**
 * The viewer hub of one session: every event published for the session gets its sequence number
 * here, is kept in the bounded replay log, and is fanned out to every attached viewer (LOC-7, LOC-11).
 *
 * Viewers come and go; the hub never waits for one. A viewer whose connection refuses a frame (too
 * far behind, or closed) is detached here — the session and the other viewers go on.
 */
import { isOperator, type Principal } from '../auth/principal.js';
import { DeltaCoalescer } from '../events/coalescer.js';
import { SessionEventLog, type ReplayResult, type SequencedEvent } from '../events/event-log.js';

/** What the hub needs of an attached client connection. */
export interface Viewer {
  readonly id: string;
  readonly principal: Principal;
  /** Sends a notification; false when the viewer can no longer receive. */
  notify(method: string, params: unknown): boolean;
  /** Sends an event every viewer gets (encoded once for all of them); false as for notify. */
  deliver(note: SharedEvent): boolean;
}

/** Every event viewers receive, as `session.event` notifications. */
export interface PublicEvent {
  type: string;
  [field: string]: unknown;
}

export const EVENT_NOTIFICATION = 'session.event';

export interface EventNotification {
  session_id: string;
  epoch: number;
  seq: number;
  event: PublicEvent;
}

/**
 * One event on its way to every viewer of a session. The first viewer to send it encodes it into
 * its wire frame (the bytes, framed: not even the UTF-8 encoding or the WebSocket header is
 * repeated); every other viewer sends that same frame, so an event costs one serialization however
 * many viewers it has (issue 32). Viewers therefore share one encoding.
 */
export class SharedEvent {
  private frame: unknown;

  constructor(readonly params: EventNotification) {}

  readonly method = EVENT_NOTIFICATION;

  /** The first call encodes; every later one returns that encoding (all viewers use one encoder). */
  encoded<T>(encode: (method: string, params: unknown) => T): T {
    if (this.frame === undefined) this.frame = encode(this.method, this.params);
    return this.frame as T;
  }
}

const COALESCED_TYPES = ['text.delta', 'reasoning.delta'] as const;

/**
 * The event of a share revoked (issue 30): `{type, member}`. Every hub that applies it — on each
 * instance of a cluster, where it arrives through the shared stream — first detaches that member's
 * viewers and tells them `session.access_revoked`, so none of them gets it or anything after it.
 */
export const SHARE_REVOKED_EVENT = 'share.revoked';
export const ACCESS_REVOKED_NOTIFICATION = 'session.access_revoked';

/** The viewers a revocation of `member`'s share takes off the session (an operator keeps its access). */
export function revokedViewer(member: string): (viewer: Viewer) => boolean {
  return (viewer) => viewer.principal.subject === member && !isOperator(viewer.principal);
}

export interface HubOptions {
  /** Most events the replay buffer keeps (`events.replay_max_events`). */
  replayCapacity: number;
  /** Most bytes it keeps, measured as the events' JSON (`events.replay_max_bytes`). */
  replayMaxBytes?: number;
  coalesceMs: number;
  /**
   * Cluster mode (docs/cluster.md): where published events go instead of being numbered here. They
   * come back through `receive` with the numbers the shared stream gave them, as do the events
   * other instances publish, so every instance shows one event under one (epoch, seq).
   */
  outbox?: (logicalId: string, event: PublicEvent) => void;
}

/** What `receive` did with a numbered event. */
export type Arrival = 'applied' | 'duplicate' | 'gap';

export class SessionHub {
  private readonly viewers = new Map<string, Viewer>();
  private log: SessionEventLog<PublicEvent>;
  private readonly coalescer: DeltaCoalescer<PublicEvent>;

  constructor(
    readonly logicalId: string,
    epoch: number,
    private readonly options: HubOptions,
    /** The last seq of this session's previous hub in the epoch (it was released while idle). */
    startAfter = 0,
  ) {
    this.log = this.newLog(epoch, startAfter);
    const outbox = options.outbox;
    const deliver = outbox
      ? (event: PublicEvent) => outbox(logicalId, event)
      : (event: PublicEvent) => this.fanOut(this.log.append(event));
    this.coalescer = new DeltaCoalescer<PublicEvent>(deliver, {
      deltaTypes: COALESCED_TYPES,
      intervalMs: options.coalesceMs,
    });
  }

  private newLog(epoch: number, startAfter: number): SessionEventLog<PublicEvent> {
    return new SessionEventLog<PublicEvent>(epoch, this.options.replayCapacity, {
      maxBytes: this.options.replayMaxBytes,
      startAfter,
    });
  }

  /** The last sequence number shown to viewers, without flushing pending deltas. */
  get receivedSeq(): number {
    return this.log.last;
  }

  /**
   * Cluster mode: an event numbered by the shared stream. Applied (and fanned out) only when it is
   * the next one; an older one is a duplicate; a later one or another epoch is a gap the caller
   * fills from the stream (or restarts the numbering past, when the stream no longer has it).
   */
  receive(epoch: number, seq: number, event: PublicEvent): Arrival {
    if (epoch === this.log.epoch && seq <= this.log.last) return 'duplicate';
    if (epoch !== this.log.epoch || seq !== this.log.last + 1) return 'gap';
    this.fanOut(this.log.append(event));
    return 'applied';
  }

  /**
   * Cluster mode: numbering goes on from `(epoch, lastSeq)` of the shared stream; the buffered
   * events are dropped. Viewers see the next event's seq jump (or its epoch change) and catch up
   * with session.events.since, which answers snapshot_required for what the stream lost.
   */
  restart(epoch: number, lastSeq: number): void {
    this.log = this.newLog(epoch, lastSeq);
  }

  get epoch(): number {
    return this.log.epoch;
  }

  /** The last sequence number published (after flushing pending deltas). */
  get lastSeq(): number {
    this.coalescer.flush();
    return this.log.last;
  }

  /** Bytes the replay buffer holds now. */
  get replayBytes(): number {
    return this.log.retainedBytes;
  }

  get viewerCount(): number {
    return this.viewers.size;
  }

  attach(viewer: Viewer): void {
    this.viewers.set(viewer.id, viewer);
  }

  detach(viewerId: string): boolean {
    return this.viewers.delete(viewerId);
  }

  /** Detaches the viewers `gone` picks, and returns them (a revoked share: issue 30). */
  detachWhere(gone: (viewer: Viewer) => boolean): Viewer[] {
    const detached = [...this.viewers.values()].filter(gone);
    for (const viewer of detached) this.viewers.delete(viewer.id);
    return detached;
  }

  has(viewerId: string): boolean {
    return this.viewers.has(viewerId);
  }

  publish(event: PublicEvent): void {
    this.coalescer.push(event);
  }

  /** Delivers pending coalesced deltas now (before a snapshot or a settlement). */
  flush(): void {
    this.coalescer.flush();
  }

  since(epoch: number, seq: number): ReplayResult<PublicEvent> {
    this.coalescer.flush();
    return this.log.since(epoch, seq);
  }

  private fanOut(sequenced: SequencedEvent<PublicEvent>): void {
    const { event } = sequenced;
    if (event.type === SHARE_REVOKED_EVENT && typeof event['member'] === 'string') {
      for (const viewer of this.detachWhere(revokedViewer(event['member'])))
        viewer.notify(ACCESS_REVOKED_NOTIFICATION, { session_id: this.logicalId });
    }
    const params: EventNotification = {
      session_id: this.logicalId,
      epoch: sequenced.epoch,
      seq: sequenced.seq,
      event: sequenced.event,
    };
    const note = new SharedEvent(params);
    // A Map may lose the entry it is on while iterated; no copy of a thousand viewers per event.
    for (const viewer of this.viewers.values()) {
      if (!viewer.deliver(note)) this.viewers.delete(viewer.id);
    }
  }
}
