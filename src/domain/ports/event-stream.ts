/**
 * The shared event stream of a cluster (SPEC SCL-1, docs/cluster.md "Events across instances"):
 * every event published for a session, by whichever instance published it, numbered once in the
 * database so every instance shows it to its viewers under the same (epoch, seq). A bounded tail is
 * kept per session; older numbers are a gap (snapshot_required), never a silent hole.
 *
 * Events are opaque JSON text here; the domain encodes and decodes them.
 */

/** Where a session's stream stands. */
export interface StreamHead {
  /** The epoch of every cursor into this stream (the authority epoch of the instance that began it). */
  epoch: number;
  /** The last number handed out (0 before the first event). */
  last_seq: number;
  /** The oldest number still retained, or null when no event is retained. */
  oldest_seq: number | null;
}

/** One session's events to append, in order. */
export interface StreamRun {
  logical_id: string;
  events: string[];
  /**
   * Numbers to hand out without rows before these events: events the publisher had to drop (its
   * outbox was full while the store could not be written). Readers see them as a gap.
   */
  skipped: number;
}

/** The numbers a run received: `first_seq` … `first_seq + events.length - 1`. */
export interface AppendedRun {
  logical_id: string;
  epoch: number;
  first_seq: number;
}

export interface StoredStreamEvent {
  seq: number;
  event: string;
}

/** What an instance is told when another commits events: enough to know whether to read. */
export interface StreamNote {
  logical_id: string;
  epoch: number;
  seq: number;
}

export interface StreamRetention {
  /** Most events kept per session (`events.replay_max_events`). */
  maxEvents: number;
  /** Most bytes kept per session, measured as the events' JSON (`events.replay_max_bytes`). */
  maxBytes: number;
}

export interface SharedEventStore {
  /** The session's stream, begun with `epoch` if it has none yet. */
  open(logicalId: string, epoch: number): Promise<StreamHead>;
  /**
   * Appends the runs in one transaction (one commit for many sessions), numbering each session's
   * events after its last; streams that do not exist yet begin with `epoch`. Every other instance
   * is notified of each run after the commit.
   */
  append(runs: readonly StreamRun[], epoch: number): Promise<AppendedRun[]>;
  /** The head and the retained events after `afterSeq` (at most `limit`, in order). */
  read(
    logicalId: string,
    afterSeq: number,
    limit: number,
  ): Promise<{ head: StreamHead | null; events: StoredStreamEvent[] }>;
  /** Drops events beyond the retention of their session; returns how many. */
  prune(): Promise<number>;
}

/** Notifications of committed runs (PostgreSQL LISTEN/NOTIFY); told after a reconnect too. */
export interface StreamSignals {
  subscribe(handler: (note: StreamNote) => void): () => void;
  /** The listening connection was lost and is back: notes may have been missed, so rescan. */
  onReconnect(handler: () => void): () => void;
}
