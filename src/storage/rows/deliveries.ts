/** The delivery ledger's rows and codecs, shared by both backends: obligations and queued events. */
import type { MessageEvent } from '../../domain/messaging/adapter.js';
import type { Delivery } from '../../domain/ports/delivery-ledger.js';
import { SessionSource } from '../../domain/session/source.js';

export interface DeliveryRow {
  delivery_id: number;
  turn_id: string;
  session_key: string;
  session_id: string;
  platform: string;
  chat_id: string;
  thread_id: string | null;
  reply_to: string | null;
  text: string;
  silent: boolean;
  recovered: boolean;
  recorded_at: string;
  recorded_at_epoch: number;
  delivered_at: string | null;
}

export type NewDelivery = Omit<
  DeliveryRow,
  'delivery_id' | 'recorded_at' | 'recorded_at_epoch' | 'delivered_at' | 'recovered'
>;

export interface RawRow extends Omit<DeliveryRow, 'silent' | 'recovered'> {
  silent: number;
  recovered: number;
}

export function fromRaw(row: RawRow): DeliveryRow {
  return { ...row, silent: row.silent === 1, recovered: row.recovered === 1 };
}

export function toDelivery(row: DeliveryRow): Delivery {
  return {
    delivery_id: row.delivery_id,
    turn_id: row.turn_id,
    session_key: row.session_key,
    session_id: row.session_id,
    target: {
      platform: row.platform,
      chat_id: row.chat_id,
      thread_id: row.thread_id,
      reply_to: row.reply_to,
    },
    text: row.text,
    silent: row.silent,
    recovered: row.recovered,
    recorded_at: row.recorded_at,
    delivered_at: row.delivered_at,
  };
}

export function eventToJson(event: MessageEvent): string {
  return JSON.stringify({
    source: event.source.toJSON(),
    text: event.text,
    internal: event.internal,
    received_at: event.received_at,
    ...(event.steer === true ? { steer: true } : {}),
  });
}

export function eventFromJson(text: string): MessageEvent {
  const raw = JSON.parse(text) as {
    source: unknown;
    text: string;
    internal: boolean;
    received_at: string;
    steer?: boolean;
  };
  return {
    source: SessionSource.fromJSON(raw.source),
    text: raw.text,
    internal: raw.internal,
    received_at: raw.received_at,
    ...(raw.steer === true ? { steer: true as const } : {}),
  };
}
