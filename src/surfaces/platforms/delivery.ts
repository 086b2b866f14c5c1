/**
 * Delivering ledger obligations through adapters. A delivery is marked delivered only after the
 * adapter accepted every piece; a failed send leaves it owed, for the next sweep.
 */
import type { PlatformAdapter } from '../../domain/messaging/adapter.js';
import { recoveredReplyText } from '../../domain/messaging/recovery.js';
import type { TypedEmitter } from '../../domain/events/typed-emitter.js';
import type { Delivery, DeliveryLedger } from '../../storage/delivery-ledger.js';
import type { MessagingEvents } from './events.js';

export class Deliverer {
  constructor(
    private readonly ledger: DeliveryLedger,
    private readonly adapterFor: (platform: string) => PlatformAdapter | undefined,
    private readonly events: TypedEmitter<MessagingEvents>,
  ) {}

  /** Sends one obligation. True when it is now delivered (or had nothing to send). */
  async deliver(delivery: Delivery, options: { recovered?: boolean } = {}): Promise<boolean> {
    if (delivery.silent || delivery.delivered_at !== null) return true;
    const adapter = this.adapterFor(delivery.target.platform);
    if (adapter === undefined) {
      this.events.emit('delivery:failed', {
        delivery,
        message: `no adapter for platform "${delivery.target.platform}"`,
      });
      return false;
    }
    const recovered = options.recovered === true;
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
      return false;
    }
    if (await this.ledger.markDelivered(delivery.delivery_id)) {
      this.events.emit('delivery:sent', { delivery, recovered });
    }
    return true;
  }

  /**
   * Delivers every owed reply. At start-up they are `recovered` (a previous process owed them);
   * a retry in the same run sends them as they were. Returns how many went out.
   */
  async sweep(options: { recovered: boolean } = { recovered: true }): Promise<number> {
    let sent = 0;
    for (const delivery of await this.ledger.listUndelivered()) {
      if (await this.deliver(delivery, options)) sent++;
    }
    return sent;
  }
}
