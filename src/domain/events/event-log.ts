/**
 * A session's event log: every event published to viewers gets the next sequence number of its
 * session, and the most recent ones stay in a bounded buffer so a viewer that reconnects can ask for
 * what it missed (SPEC LOC-11). A gap older than the buffer, or a cursor from another authority
 * epoch, gets an explicit "snapshot required" answer — never a silent hole. Completed messages are
 * always recoverable from the transcript, so a snapshot is a complete answer.
 */

export interface SequencedEvent<E> {
  /** Per-session sequence number, starting at 1 in each epoch. */
  seq: number;
  epoch: number;
  event: E;
}

export type ReplayResult<E> =
  | { kind: 'events'; events: SequencedEvent<E>[]; last_seq: number }
  | { kind: 'snapshot_required'; last_seq: number; oldest_seq: number | null; reason: 'gap' | 'epoch' };

export interface EventLogBounds<E> {
  /** Most bytes the buffer keeps (by `sizeOf`); the oldest events go first. Default: no byte cap. */
  maxBytes?: number;
  /** The size of one event in bytes, measured once when it is appended. */
  sizeOf?: (event: E) => number;
  /**
   * The last sequence number an earlier log of the same session and epoch published (a hub that
   * was released while idle and is now rebuilt): numbering goes on after it, and a cursor from
   * before it gets snapshot_required, never another log's events under its old numbers.
   */
  startAfter?: number;
}

export class SessionEventLog<E> {
  /**
   * The buffer, grown as events arrive rather than preallocated: every session a viewer looks at has
   * a log, and a full-size ring for each idle one dominated the daemon's memory per live session.
   * Retained events are `buffer[head..]`, in sequence order; the dead prefix is compacted away.
   */
  private buffer: SequencedEvent<E>[] = [];
  private sizes: number[] = [];
  private head = 0;
  private bytes = 0;
  private lastSeq: number;
  private readonly maxBytes: number;
  private readonly sizeOf: ((event: E) => number) | null;

  constructor(
    readonly epoch: number,
    private readonly capacity = 1024,
    bounds: EventLogBounds<E> = {},
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
    this.maxBytes = bounds.maxBytes ?? Number.POSITIVE_INFINITY;
    this.sizeOf = bounds.maxBytes === undefined ? null : (bounds.sizeOf ?? ((e) => JSON.stringify(e).length));
    this.lastSeq = bounds.startAfter ?? 0;
  }

  /** Events the buffer holds now: what was published, at most `capacity` and `maxBytes`. */
  get slots(): number {
    return this.buffer.length - this.head;
  }

  /** Bytes the retained events measure (0 without a byte cap). */
  get retainedBytes(): number {
    return this.bytes;
  }

  get last(): number {
    return this.lastSeq;
  }

  /** The oldest sequence number still replayable, or null when nothing was published yet. */
  get oldest(): number | null {
    if (this.lastSeq === 0) return null;
    return this.buffer[this.head]?.seq ?? this.lastSeq + 1;
  }

  append(event: E): SequencedEvent<E> {
    const sequenced = { seq: ++this.lastSeq, epoch: this.epoch, event };
    const size = this.sizeOf?.(event) ?? 0;
    this.buffer.push(sequenced);
    this.sizes.push(size);
    this.bytes += size;
    while (this.slots > this.capacity || (this.bytes > this.maxBytes && this.slots > 0)) {
      this.bytes -= this.sizes[this.head]!;
      this.head++;
    }
    if (this.head > 64 && this.head * 2 > this.buffer.length) {
      this.buffer = this.buffer.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    return sequenced;
  }

  /** Events after `seq` (exclusive), given the viewer's cursor from epoch `epoch`. */
  since(epoch: number, seq: number): ReplayResult<E> {
    if (epoch !== this.epoch) {
      return { kind: 'snapshot_required', last_seq: this.lastSeq, oldest_seq: this.oldest, reason: 'epoch' };
    }
    if (seq > this.lastSeq || seq < 0) {
      // A cursor from the future cannot belong to this log: the viewer must start over.
      return { kind: 'snapshot_required', last_seq: this.lastSeq, oldest_seq: this.oldest, reason: 'gap' };
    }
    const oldest = this.oldest;
    if (seq < this.lastSeq && oldest !== null && seq + 1 < oldest) {
      return { kind: 'snapshot_required', last_seq: this.lastSeq, oldest_seq: oldest, reason: 'gap' };
    }
    const events: SequencedEvent<E>[] = [];
    const from = this.head + (seq + 1 - (oldest ?? seq + 1));
    for (let i = Math.max(from, this.head); i < this.buffer.length; i++) {
      const item = this.buffer[i]!;
      if (item.seq !== seq + 1 + events.length)
        throw new Error(`event log invariant broken at seq ${item.seq}`);
      events.push(item);
    }
    return { kind: 'events', events, last_seq: this.lastSeq };
  }
}
