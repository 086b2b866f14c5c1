/**
 * Steers on a chat platform (issue 28, `platforms.<name>.during_turn: steer`): a message sent while
 * a turn runs waits on its lane as a `queued` item marked `steer` (durably, on the backlog), and
 * the running turn takes every waiting steer at its next step boundary. Taking is one commit
 * (DeliveryLedger.applySteers: the messages in the transcript, the backlog rows gone, the platform
 * messages taken), and only after it are the steers taken off the queue, so a failed commit leaves
 * them to run as the next turns. A steer still waiting when its turn ends runs as the next turn.
 */
import type { InboundRef, MessageEvent } from './adapter.js';
import type { Lane } from './chat-commands.js';
import type { MessagingEvents } from './events.js';
import type { Lanes } from './lanes.js';
import type * as queue from './queue.js';
import { randomBytes } from 'node:crypto';
import type { TypedEmitter } from '../events/typed-emitter.js';
import type { DeliveryLedger } from '../ports/delivery-ledger.js';
import type { TranscriptMessage } from '../vocabulary.js';

export interface SteerDeps {
  readonly ledger: DeliveryLedger;
  readonly lanes: Lanes;
  readonly events: TypedEmitter<MessagingEvents>;
  refOf(event: MessageEvent): InboundRef | null;
}

/** What a chat is told when messages it sent during a turn came after the turn's last model call. */
export function deferredSteerNotice(count: number): string {
  return count === 1
    ? 'Your message came after this turn had made its last step, so it is answered as the next turn.'
    : `Your ${count} messages came after this turn had made its last step, so they are answered as the next turns.`;
}

/** The steers waiting on the lane, in order. */
export function waitingSteers(lane: Lane): queue.QueueItem<MessageEvent>[] {
  return [lane.state.slot, ...lane.state.overflow].filter(
    (item): item is queue.QueueItem<MessageEvent> => item !== null && item.payload.steer === true,
  );
}

/** Applies the lane's waiting steers to its running turn; the messages `build` made of them, or none. */
export async function applyWaitingSteers(
  deps: SteerDeps,
  lane: Lane,
  turn: { sessionId: string; turnId: string },
  build: (event: MessageEvent, steerId: string) => TranscriptMessage,
): Promise<TranscriptMessage[]> {
  const waiting = waitingSteers(lane);
  if (waiting.length === 0) return [];
  const steers = waiting.map((item) => {
    // The backlog row's id names the steer; a steer whose row write failed gets an id of its own.
    const row = deps.lanes.rowOf(lane, item.payload);
    return {
      item,
      row,
      message: build(item.payload, row ?? `steer_${randomBytes(9).toString('base64url')}`),
    };
  });
  await deps.ledger.applySteers(
    lane.key,
    turn.sessionId,
    steers.map(({ item, row }) => ({ itemId: row, inbound: deps.refOf(item.payload) })),
    steers.map((s) => s.message),
  );
  const applied = new Set(waiting);
  const [slot = null, ...overflow] = [lane.state.slot, ...lane.state.overflow].filter(
    (item): item is queue.QueueItem<MessageEvent> => item !== null && !applied.has(item),
  );
  lane.state = { ...lane.state, slot, overflow };
  for (const { row, item } of steers) {
    if (row !== null) deps.lanes.taken(lane.key, row);
    deps.events.emit('steer:applied', {
      session_key: lane.key,
      turn_id: turn.turnId,
      text: item.payload.text,
    });
  }
  return steers.map((s) => s.message);
}
