/**
 * Keeping the chat's events in order across gaps and drops (SPEC UX-1). A live event right after
 * the cursor is applied; while the chat is connecting, or past a gap, events are held. A resync
 * then fills in what was missed — a replay from `session.events.since` while the daemon still
 * buffers it, else a rebuild from the `session.resume` snapshot (cursor.ts decides) — learns where
 * our unacknowledged submission stands, and applies what was held.
 */
import { RpcCallError } from '../../client/rpc-client.js';
import { classifyArrival, planResync, unseenEvents } from './cursor.js';
import type { ChatEvent } from './render.js';
import type { SessionView } from './session-view.js';
import type { Call, Sequenced, Snapshot } from './wire.js';

/** What became of a live event: shown, dropped as already shown, or held behind a gap. */
export type LiveArrival = 'applied' | 'duplicate' | 'held';

/** Rounds of resync before giving up on closing a gap that keeps reopening. */
const RESYNC_ROUNDS = 3;

export class CatchUp {
  private held: Sequenced[] = [];

  constructor(
    private readonly view: SessionView,
    private readonly call: Call,
  ) {}

  /** Keeps an event for after the next resync (the chat is not caught up yet). */
  hold(e: Sequenced): void {
    this.held.push(e);
  }

  /** A live event while caught up. `held` means a gap: the caller resyncs. */
  arrive(e: Sequenced): LiveArrival {
    switch (classifyArrival(this.view.position!, e.epoch, e.seq)) {
      case 'apply':
        this.view.position = { epoch: e.epoch, lastSeq: e.seq };
        this.view.apply(e.event);
        return 'applied';
      case 'duplicate':
        return 'duplicate';
      default:
        this.held.push(e);
        return 'held';
    }
  }

  /** Re-attach and catch up: replay from the buffer when possible, else rebuild from the snapshot. */
  async resync(): Promise<void> {
    const view = this.view;
    for (let round = 0; round < RESYNC_ROUNDS; round++) {
      const snapshot = await this.call<Snapshot>('session.resume', { session_id: view.sessionId });
      const plan = planResync(view.position, snapshot.epoch);
      if (plan.kind === 'replay') {
        try {
          const since = await this.call<{ events: { seq: number; event: ChatEvent }[] }>(
            'session.events.since',
            { session_id: view.sessionId, epoch: plan.epoch, after_seq: plan.afterSeq },
          );
          for (const e of unseenEvents(since.events, view.position!.lastSeq)) {
            view.position = { epoch: plan.epoch, lastSeq: e.seq };
            view.apply(e.event);
          }
          if (view.inflight && !view.inflight.acknowledged) view.reconcile(snapshot);
        } catch (error) {
          if (!(error instanceof RpcCallError && error.reason === 'snapshot_required')) throw error;
          view.fromSnapshot(snapshot);
        }
      } else {
        view.fromSnapshot(snapshot);
      }
      if (this.drainHeld()) return;
    }
  }

  /** Applies held live events in order; false when a gap remains (resync again). */
  private drainHeld(): boolean {
    const held = this.held.sort((a, b) => a.seq - b.seq);
    this.held = [];
    for (const e of held) {
      const arrival = classifyArrival(this.view.position!, e.epoch, e.seq);
      if (arrival === 'duplicate') continue;
      if (arrival !== 'apply') return false;
      this.view.position = { epoch: e.epoch, lastSeq: e.seq };
      this.view.apply(e.event);
    }
    return true;
  }
}
