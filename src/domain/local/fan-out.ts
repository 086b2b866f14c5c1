/**
 * How a local session's public events reach its viewers (LOC-7, SCL-1): each session's hub numbers
 * and buffers them; in cluster mode they go through the shared stream first (cluster-events.ts), so
 * viewers on every instance see one numbering. This owns both and nothing else: who may publish or
 * attach is the service's business.
 */
import type { SharedEventStore, StreamSignals } from '../ports/event-stream.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import { ClusterEvents } from './cluster-events.js';
import type { PublicEvent, SessionHub, Viewer } from './hub.js';
import { eventsSince, replayReply, SessionHubs } from './hubs.js';
import { LEASE_LOST } from './scheduler.js';
import type { LocalEvents } from './events.js';

export interface FanOutOptions {
  epoch: number;
  replayCapacity: number;
  /** Byte cap of each session's replay buffer (`events.replay_max_bytes`). */
  replayMaxBytes?: number;
  coalesceMs: number;
  /** Cluster mode (docs/cluster.md): the shared stream; absent, events stay in this process. */
  cluster?: { store: SharedEventStore; signals: StreamSignals };
  onError: (error: unknown, context: string) => void;
}

export class EventFanOut {
  private readonly hubs: SessionHubs;
  /** The shared event stream in cluster mode; null otherwise. */
  readonly cluster: ClusterEvents | null;

  constructor(private readonly options: FanOutOptions) {
    this.hubs = new SessionHubs(options.epoch, {
      replayCapacity: options.replayCapacity,
      ...(options.replayMaxBytes === undefined ? {} : { replayMaxBytes: options.replayMaxBytes }),
      coalesceMs: options.coalesceMs,
      ...(options.cluster ? { outbox: (id, event) => this.cluster!.enqueue(id, event) } : {}),
    });
    this.cluster = options.cluster
      ? new ClusterEvents({
          ...options.cluster,
          epoch: options.epoch,
          hubs: this.hubs,
          maxEvents: options.replayCapacity,
          onError: options.onError,
        })
      : null;
  }

  /** Every settlement this instance records becomes an `admission.settled` event of its session. */
  announceSettlements(events: TypedEmitter<LocalEvents>): void {
    events.on('turn:settled', (e) => {
      // Left running for the instance that takes the session over: it settles there (SCL-1).
      if (e.detail === LEASE_LOST && !e.accepted) return;
      this.hub(e.logical_id).publish({
        type: 'admission.settled',
        admission_id: e.admission_id,
        execution_generation: e.generation,
        outcome: e.outcome,
      });
    });
  }

  /** The session's hub, made on first use. */
  hub(logicalId: string): SessionHub {
    return this.hubs.of(logicalId);
  }

  publish(logicalId: string, event: PublicEvent): void {
    this.hub(logicalId).publish(event);
  }

  /** The session's hub; in cluster mode synced with the shared stream first. */
  followed(logicalId: string): Promise<SessionHub> {
    return this.cluster?.follow(logicalId) ?? Promise.resolve(this.hub(logicalId));
  }

  detach(viewerId: string, logicalId: string): boolean {
    return this.hubs.find(logicalId)?.detach(viewerId) ?? false;
  }

  /** The viewers `gone` picks leave the session (in this process); returns them. */
  detachWhere(logicalId: string, gone: (viewer: Viewer) => boolean): Viewer[] {
    return this.hubs.find(logicalId)?.detachWhere(gone) ?? [];
  }

  /** A connection closed: its viewer leaves every session. */
  viewerGone(viewerId: string): void {
    for (const hub of this.hubs.all()) hub.detach(viewerId);
  }

  /** session.events_since from the hub's buffer, or (in cluster mode) from the shared stream. */
  async eventsSince(logicalId: string, epoch: number, afterSeq: number): Promise<Record<string, unknown>> {
    const cluster = this.cluster;
    if (!cluster) return eventsSince(this.hub(logicalId), logicalId, epoch, afterSeq, this.options.epoch);
    const replay = await cluster.since(logicalId, epoch, afterSeq);
    return replayReply(replay, logicalId, this.hub(logicalId).epoch);
  }

  /** The sessions with a hub in memory now. */
  ids(): Iterable<string> {
    return this.hubs.ids();
  }

  /** Viewers attached to the sessions in memory. */
  get viewerCount(): number {
    let viewers = 0;
    for (const hub of this.hubs.all()) viewers += hub.viewerCount;
    return viewers;
  }

  get size(): number {
    return this.hubs.size;
  }

  /** Releases the hubs nobody views for which `idle` holds (their numbering is kept); their ids. */
  releaseIdle(idle: (logicalId: string) => boolean): string[] {
    const released = this.hubs.releaseIdle(idle);
    this.cluster?.released(released);
    return released;
  }

  /** Publishes what every hub holds back (coalesced deltas) now. */
  flushHubs(): void {
    for (const hub of this.hubs.all()) hub.flush();
  }

  /** Flushes every hub and, in cluster mode, waits (until `deadline`) for the stream to commit it. */
  async flush(deadline: number): Promise<void> {
    this.flushHubs();
    await this.cluster?.flush(deadline);
  }
}
