/**
 * The viewer hub of one session: every event published for the session gets its sequence number
 * here, is kept in the bounded replay log, and is fanned out to every attached viewer (LOC-7, LOC-11).
 *
 * Viewers come and go; the hub never waits for one. A viewer whose connection refuses a frame (too
 * far behind, or closed) is detached here — the session and the other viewers go on.
 */
import type { Principal } from '../auth/principal.js';
import { DeltaCoalescer } from '../events/coalescer.js';
import { SessionEventLog, type ReplayResult, type SequencedEvent } from '../events/event-log.js';

/** What the hub needs of an attached client connection. */
export interface Viewer {
  readonly id: string;
  readonly principal: Principal;
  /** Sends a notification; false when the viewer can no longer receive. */
  notify(method: string, params: unknown): boolean;
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

const COALESCED_TYPES = ['text.delta', 'reasoning.delta'] as const;

export interface HubOptions {
  /** Most events the replay buffer keeps (`events.replay_max_events`). */
  replayCapacity: number;
  /** Most bytes it keeps, measured as the events' JSON (`events.replay_max_bytes`). */
  replayMaxBytes?: number;
  coalesceMs: number;
}

export class SessionHub {
  private readonly viewers = new Map<string, Viewer>();
  private readonly log: SessionEventLog<PublicEvent>;
  private readonly coalescer: DeltaCoalescer<PublicEvent>;

  constructor(
    readonly logicalId: string,
    epoch: number,
    options: HubOptions,
    /** The last seq of this session's previous hub in the epoch (it was released while idle). */
    startAfter = 0,
  ) {
    this.log = new SessionEventLog<PublicEvent>(epoch, options.replayCapacity, {
      maxBytes: options.replayMaxBytes,
      startAfter,
    });
    this.coalescer = new DeltaCoalescer<PublicEvent>((event) => this.fanOut(this.log.append(event)), {
      deltaTypes: COALESCED_TYPES,
      intervalMs: options.coalesceMs,
    });
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
    const params: EventNotification = {
      session_id: this.logicalId,
      epoch: sequenced.epoch,
      seq: sequenced.seq,
      event: sequenced.event,
    };
    for (const viewer of [...this.viewers.values()]) {
      if (!viewer.notify(EVENT_NOTIFICATION, params)) this.viewers.delete(viewer.id);
    }
  }
}
