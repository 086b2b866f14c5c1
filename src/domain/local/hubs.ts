/**
 * The event hubs of the local sessions, made on first use and released while idle (housekeeping,
 * docs/agent-cache.md). A released hub's last sequence number is kept — one number per session — so
 * the hub rebuilt for it numbers on: a viewer's old cursor then gets every later event or
 * `snapshot_required`, never another hub's events under its old numbers.
 */
import { GatewayError } from '../errors.js';
import type { ReplayResult } from '../events/event-log.js';
import { SessionHub, type HubOptions, type PublicEvent } from './hub.js';

export class SessionHubs {
  private readonly hubs = new Map<string, SessionHub>();
  private readonly releasedSeq = new Map<string, number>();

  constructor(
    private readonly epoch: number,
    private readonly options: HubOptions,
  ) {}

  /** The session's hub, made (numbering on after a released one) when it has none. */
  of(logicalId: string): SessionHub {
    let hub = this.hubs.get(logicalId);
    if (!hub) {
      hub = new SessionHub(logicalId, this.epoch, this.options, this.releasedSeq.get(logicalId) ?? 0);
      this.releasedSeq.delete(logicalId);
      this.hubs.set(logicalId, hub);
    }
    return hub;
  }

  /** The session's hub if it has one now. */
  find(logicalId: string): SessionHub | undefined {
    return this.hubs.get(logicalId);
  }

  all(): IterableIterator<SessionHub> {
    return this.hubs.values();
  }

  ids(): IterableIterator<string> {
    return this.hubs.keys();
  }

  get size(): number {
    return this.hubs.size;
  }

  /** Releases every hub without viewers for which `idle` holds; returns their session ids. */
  releaseIdle(idle: (logicalId: string) => boolean): string[] {
    const released: string[] = [];
    for (const [id, hub] of this.hubs) {
      if (hub.viewerCount > 0 || !idle(id)) continue;
      const last = hub.lastSeq; // flushes pending deltas (none: nothing runs)
      this.hubs.delete(id);
      if (last > 0) this.releasedSeq.set(id, last);
      released.push(id);
    }
    return released;
  }
}

/** session.events_since: the hub's buffered events after `afterSeq`, or snapshot_required. */
export function eventsSince(
  hub: SessionHub,
  logicalId: string,
  epoch: number,
  afterSeq: number,
  currentEpoch: number,
): Record<string, unknown> {
  return replayReply(hub.since(epoch, afterSeq), logicalId, currentEpoch);
}

/** The answer of session.events.since for a replay: its events, or the error snapshot_required. */
export function replayReply(
  replay: ReplayResult<PublicEvent>,
  logicalId: string,
  currentEpoch: number,
): Record<string, unknown> {
  if (replay.kind === 'snapshot_required') {
    throw new GatewayError(
      'snapshot_required',
      'those events are no longer buffered: resume for a snapshot',
      {
        session_id: logicalId,
        epoch: currentEpoch,
        last_seq: replay.last_seq,
        oldest_seq: replay.oldest_seq,
        why: replay.reason,
      },
    );
  }
  return {
    session_id: logicalId,
    epoch: currentEpoch,
    last_seq: replay.last_seq,
    events: replay.events.map((e) => ({ seq: e.seq, event: e.event })),
  };
}
