/**
 * Parking: inbound events that arrive while the gateway restores (start-up recovery is running, the
 * backlog not yet back on its lanes), kept on disk until they are admitted.
 *
 * The platform confirms an event once the sink's promise resolves (Telegram: the next getUpdates
 * offset), and recovery can take long (its sweep waits on sends that may be retrying 429s). Held
 * only in memory, a parked event would be lost by a crash in that window. So each one is written
 * as a row of the inbound backlog under PARKED_KEY, a key no session has, before its sink promise
 * resolves. Once recovery is over the gateway admits every parked event in order, oldest first
 * (those a crashed process left come before those of this one), and releases the rows of the ones
 * its admission took.
 *
 * A parked row does not record its platform message as taken: admission still runs the redelivery
 * check, so an event that a crash left both parked and taken (admitted, not yet released) is
 * dropped as the duplicate it is. A platform redelivering a parked event (it was written, the
 * process died before confirming it) is recognised here, against the parked events' InboundRefs.
 */
import { randomBytes } from 'node:crypto';
import type { InboundRef, MessageEvent } from './adapter.js';
import type { DeliveryLedger } from '../ports/delivery-ledger.js';

/** The backlog key of parked events: session keys all start with `agent:main:`. */
export const PARKED_KEY = 'gatehouse:parked';

export interface ParkedEvent {
  readonly itemId: string;
  readonly event: MessageEvent;
}

export class Parking {
  private items: ParkedEvent[] = [];
  /** Writes happen one at a time, each the whole list, in the order they were asked for. */
  private writes: Promise<void> = Promise.resolve();

  constructor(
    private readonly ledger: DeliveryLedger,
    private readonly refOf: (event: MessageEvent) => InboundRef | null,
  ) {}

  /** Reads what a previous process left parked. Before anything is parked. */
  async load(): Promise<void> {
    const stored = await this.ledger.listBacklog();
    this.items = stored
      .filter((item) => item.sessionKey === PARKED_KEY)
      .map((item) => ({ itemId: item.itemId, event: item.event }));
  }

  /** Every parked event, oldest first. */
  list(): readonly ParkedEvent[] {
    return this.items;
  }

  /**
   * Parks `event`; resolves once its row is written, with false when it is a redelivery of an
   * event parked already (nothing is written). A failed write is not fatal: the event is still
   * parked in memory and admitted after recovery, as before the write existed.
   */
  park(event: MessageEvent): Promise<boolean> {
    const ref = this.refOf(event);
    if (ref !== null && this.items.some((item) => sameRef(this.refOf(item.event), ref))) {
      return Promise.resolve(false);
    }
    this.items = [...this.items, { itemId: `pk_${randomBytes(12).toString('base64url')}`, event }];
    return this.write().then(() => true);
  }

  /** The admission of `done` took them (or dropped them as duplicates): their rows go. */
  release(done: readonly ParkedEvent[]): Promise<void> {
    const gone = new Set(done.map((item) => item.itemId));
    this.items = this.items.filter((item) => !gone.has(item.itemId));
    return this.write();
  }

  private write(): Promise<void> {
    const waiting = this.items.map(({ itemId, event }) => ({
      itemId,
      kind: event.internal ? ('internal' as const) : ('message' as const),
      event,
      inbound: null,
    }));
    const step = this.writes.then(() =>
      this.ledger.saveBacklog(PARKED_KEY, { starting: null, waiting, settled: [] }).catch(() => undefined),
    );
    this.writes = step;
    return step;
  }
}

function sameRef(a: InboundRef | null, b: InboundRef): boolean {
  return a !== null && a.platform === b.platform && a.chat_id === b.chat_id && a.message_id === b.message_id;
}
