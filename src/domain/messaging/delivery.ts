/**
 * Delivering ledger obligations through adapters. A delivery is marked delivered only after the
 * adapter accepted every piece; a failed send leaves it owed, for the next sweep.
 *
 * Two paths send: the turn that recorded the reply, and a sweep (start-up, and retries after a
 * failed send). They must never both send one reply. Invariants:
 * - a turn reserves its reply (by turn id) before recording it and releases it only after its own
 *   delivery attempt, so a sweep never sees a reply its turn is still about to send;
 * - one delivery is sent by at most one attempt at a time (a second caller shares the first's);
 * - a sweep re-reads each row just before sending it, so a reply delivered after the sweep listed
 *   it is not sent again;
 * - an attempt lasts until its row is marked delivered (a group commit, shared with other chats),
 *   even though its caller goes on as soon as the platform accepted the reply: a sweep meanwhile
 *   shares the attempt instead of sending again, and the gateway waits for the mark when it stops.
 *
 * Retries: an owed reply whose send failed is not left for the next restart. A failed send
 * schedules a sweep `retryMs` later (one at a time), while retries are `on`. They are `held` until
 * the gateway runs (a failed send of the start-up sweep is retried as soon as they are turned on)
 * and `off` from the drain on.
 */
import type { PlatformAdapter } from './adapter.js';
import { isGatewayNotice, recoveredReplyText } from './recovery.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import type { Delivery, DeliveryLedger } from '../ports/delivery-ledger.js';
import type { MessagingEvents } from './events.js';
import { stored } from './stored.js';

export type RetryMode = 'held' | 'on' | 'off';

export interface RetryOptions {
  readonly retryMs: number;
  /** Hands work (a retry sweep, a pending mark) to the gateway, which waits for it when it stops. */
  track(work: Promise<void>): void;
}

export class Deliverer {
  /** Turns that record and deliver their own reply right now: sweeps leave those replies alone. */
  private readonly reserved = new Set<string>();
  /** Send attempts in progress, by delivery id. */
  private readonly sending = new Map<number, Promise<boolean>>();
  /** Owed by a previous process (found by the start-up sweep) and not yet sent: they carry the notice. */
  private readonly inherited = new Set<number>();
  private retryMode: RetryMode = 'held';
  private retryTimer: NodeJS.Timeout | null = null;
  /** A send failed while retries were held: one is due once they are on. */
  private retryWanted = false;

  constructor(
    private readonly ledger: DeliveryLedger,
    private readonly adapterFor: (platform: string) => PlatformAdapter | undefined,
    private readonly events: TypedEmitter<MessagingEvents>,
    private readonly retry: RetryOptions = { retryMs: 5000, track: () => undefined },
  ) {
    this.events.on('delivery:failed', () => this.scheduleRetry());
  }

  retries(mode: RetryMode): void {
    this.retryMode = mode;
    if (mode === 'off' && this.retryTimer !== null) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    if (mode === 'on' && this.retryWanted) this.scheduleRetry();
  }

  private scheduleRetry(): void {
    if (this.retryMode === 'held') this.retryWanted = true;
    if (this.retryTimer !== null || this.retryMode !== 'on') return;
    this.retryWanted = false;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.retryMode !== 'on') return;
      this.retry.track(this.sweep({ recovered: false }).then(() => undefined));
    }, this.retry.retryMs);
    this.retryTimer.unref();
  }

  /**
   * The turn `turnId` is about to record its reply and will deliver it itself: until the returned
   * release is called, sweeps skip that reply. Release after the turn's own attempt, whatever its
   * outcome; a reply still owed then is the sweeps' again.
   */
  reserve(turnId: string): () => void {
    this.reserved.add(turnId);
    return () => this.reserved.delete(turnId);
  }

  /**
   * Sends one obligation. True once the platform accepted it (or there was nothing to send); its
   * mark as delivered follows (`delivery:sent`), tracked by the gateway. A caller that joins an
   * attempt already under way waits for that mark.
   */
  deliver(delivery: Delivery, options: { recovered?: boolean } = {}): Promise<boolean> {
    if (delivery.silent || delivery.delivered_at !== null) return Promise.resolve(true);
    const current = this.sending.get(delivery.delivery_id);
    if (current !== undefined) return current;
    if (options.recovered === true) this.inherited.add(delivery.delivery_id);
    const recovered =
      (delivery.recovered || this.inherited.has(delivery.delivery_id)) && !isGatewayNotice(delivery.turn_id);
    const attempt = this.send(delivery, recovered);
    const done = attempt.then((step) => step.marked).finally(() => this.sending.delete(delivery.delivery_id));
    this.sending.set(delivery.delivery_id, done);
    this.retry.track(
      done.then(
        () => undefined,
        () => undefined,
      ),
    );
    return attempt.then((step) => step.sent);
  }

  /**
   * Delivers every owed reply that no turn is delivering itself. At start-up they are `recovered`
   * (a previous process owed them) and carry the "Recovered reply" notice, also when a later retry
   * in this run is what finally sends them; a reply this process owes is sent as it was. Returns
   * how many went out.
   */
  async sweep(options: { recovered: boolean } = { recovered: true }): Promise<number> {
    let sent = 0;
    for (const listed of await this.ledger.listUndelivered()) {
      if (this.reserved.has(listed.turn_id)) continue;
      // The list is a snapshot: its turn, or another sweep, may have delivered it since.
      const delivery = await this.ledger.readDelivery(listed.delivery_id);
      if (delivery === null || delivery.delivered_at !== null || this.reserved.has(delivery.turn_id))
        continue;
      // Sent already, its mark still committing: wait for it, but it is not this sweep's send.
      const current = this.sending.get(delivery.delivery_id);
      if (current !== undefined) {
        await current.catch(() => false);
        continue;
      }
      if (await this.deliver(delivery, options)) sent++;
    }
    return sent;
  }

  /** `sent`: the platform accepted every piece; `marked`: resolves once the row says so. */
  private async send(
    delivery: Delivery,
    recovered: boolean,
  ): Promise<{ sent: boolean; marked: Promise<boolean> }> {
    const failed = { sent: false, marked: Promise.resolve(false) };
    const adapter = this.adapterFor(delivery.target.platform);
    if (adapter === undefined) {
      this.events.emit('delivery:failed', {
        delivery,
        message: `no adapter for platform "${delivery.target.platform}"`,
      });
      return failed;
    }
    const text = recovered ? recoveredReplyText(delivery.text) : delivery.text;
    try {
      await adapter.send(delivery.target.chat_id, text, {
        thread_id: delivery.target.thread_id,
        reply_to: delivery.target.reply_to,
      });
    } catch (error) {
      this.events.emit('delivery:failed', {
        delivery,
        message: error instanceof Error ? error.message : String(error),
      });
      return failed;
    }
    this.inherited.delete(delivery.delivery_id);
    // A mark that fails leaves the reply owed: the next start's sweep sends it again, flagged
    // recovered (at least once, as after a crash between the send and the mark).
    // A mark refused by a full disk waits for the store (issue 26 item 5), so the reply is not sent
    // again after the next restart; it stops waiting when the gateway drains.
    const marked = stored(() => this.ledger.markDelivered(delivery.delivery_id), {
      events: this.events,
      sessionKey: delivery.session_key,
      operation: 'delivered',
      stop: () => this.retryMode === 'off',
    }).then((fresh) => {
      if (fresh) this.events.emit('delivery:sent', { delivery, recovered });
      return true;
    });
    return { sent: true, marked };
  }
}
