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

export class SessionEventLog<E> {
  /**
   * The ring, grown as events arrive rather than preallocated: every session a viewer looks at has a
   * log, and a full-size ring (2048 slots, ~16 KiB) for each idle one dominated the daemon's memory
   * per live session. Slot of seq s is (s - 1) % capacity, so the array fills densely from 0.
   */
  private readonly buffer: SequencedEvent<E>[] = [];
  private lastSeq = 0;

  constructor(
    readonly epoch: number,
    private readonly capacity = 1024,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError('capacity must be a positive integer');
  }

  /** Slots the ring holds now: what was published, at most `capacity`. */
  get slots(): number {
    return this.buffer.length;
  }

  get last(): number {
    return this.lastSeq;
  }

  /** The oldest sequence number still replayable, or null when nothing was published yet. */
  get oldest(): number | null {
    if (this.lastSeq === 0) return null;
    return Math.max(1, this.lastSeq - this.capacity + 1);
  }

  append(event: E): SequencedEvent<E> {
    const sequenced = { seq: ++this.lastSeq, epoch: this.epoch, event };
    this.buffer[(sequenced.seq - 1) % this.capacity] = sequenced;
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
    if (oldest !== null && seq + 1 < oldest) {
      return { kind: 'snapshot_required', last_seq: this.lastSeq, oldest_seq: oldest, reason: 'gap' };
    }
    const events: SequencedEvent<E>[] = [];
    for (let s = seq + 1; s <= this.lastSeq; s++) {
      const item = this.buffer[(s - 1) % this.capacity];
      if (item?.seq !== s) throw new Error(`event log invariant broken at seq ${s}`);
      events.push(item);
    }
    return { kind: 'events', events, last_seq: this.lastSeq };
  }
}
