/**
 * When an inbound event is taken: the bookkeeping behind the promise the InboundSink returns.
 *
 * An event is taken once the gateway made it durable or dropped it on purpose. Most events are
 * taken when their admission ends (a backlog row written, a command or an answer recorded, a
 * redelivery dropped). Two are taken later: one a turn was launched for, when the turn sets its
 * in-flight marker (turn:start) or ends without; and a /queue command, when the item it queued is
 * taken (its `origin` is the command's message).
 */
import type { MessageEvent } from './adapter.js';

export class Taking {
  /** Resolvers of the promises handed out by expect(), until their event is taken. */
  private readonly untaken = new Map<MessageEvent, () => void>();
  /** A /queue item's event is taken for the message that asked for it. */
  private readonly origins = new WeakMap<MessageEvent, MessageEvent>();
  /** Events a turn was launched for, by turn id, until the turn takes them or ends. */
  private readonly launching = new Map<string, MessageEvent>();

  /** A promise that resolves once `event` is taken. */
  expect(event: MessageEvent): Promise<void> {
    return new Promise((resolve) => this.untaken.set(event, resolve));
  }

  /** `item` was made of `origin` (a /queue item of its command's message). */
  derived(item: MessageEvent, origin: MessageEvent): void {
    this.origins.set(item, origin);
  }

  /** A turn was launched for `event`. */
  launched(turnId: string, event: MessageEvent): void {
    this.launching.set(turnId, event);
  }

  /** The turn took its event (its in-flight marker is set), or ended without. */
  turnTook(turnId: string): void {
    const event = this.launching.get(turnId);
    if (event === undefined) return;
    this.launching.delete(turnId);
    this.taken(event);
  }

  /** Whether a turn was launched for `event` (or an item made of it) and has not taken it yet. */
  awaitingTurn(event: MessageEvent): boolean {
    for (const launched of this.launching.values()) {
      if (launched === event || this.origins.get(launched) === event) return true;
    }
    return false;
  }

  /**
   * `event` (or the item made of it) is taken: its promise resolves. Idempotent; a no-op for events
   * nothing waits on (restored from the backlog, auto-continued).
   */
  taken(event: MessageEvent): void {
    const origin = this.origins.get(event) ?? event;
    const resolve = this.untaken.get(origin);
    if (resolve === undefined) return;
    this.untaken.delete(origin);
    resolve();
  }
}
