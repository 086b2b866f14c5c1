/** Storage operations on the delivery ledger, the messaging state facts and the restart streaks. */
import type Database from 'better-sqlite3';
import { fromRaw, type DeliveryRow, type NewDelivery, type RawRow } from '../../rows/deliveries.js';
import { statement } from '../statements.js';

type Db = Database.Database;

/** Inserts an obligation; a second record for the same turn is ignored. Returns the row's id. */
export function insertDelivery(db: Db, row: NewDelivery, at: Date): number {
  statement(
    db,
    `INSERT INTO delivery_ledger (turn_id, session_key, session_id, platform, chat_id, thread_id, reply_to,
       text, silent, recorded_at, recorded_at_epoch, delivered_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (turn_id) DO NOTHING`,
  ).run(
    row.turn_id,
    row.session_key,
    row.session_id,
    row.platform,
    row.chat_id,
    row.thread_id,
    row.reply_to,
    row.text,
    row.silent ? 1 : 0,
    at.toISOString(),
    Math.floor(at.getTime() / 1000),
    // Nothing to send: the obligation is born fulfilled.
    row.silent ? at.toISOString() : null,
  );
  const found = statement(db, 'SELECT delivery_id FROM delivery_ledger WHERE turn_id = ?').get(
    row.turn_id,
  ) as {
    delivery_id: number;
  };
  return found.delivery_id;
}

export function markDelivered(db: Db, deliveryId: number, at: Date): boolean {
  return (
    statement(
      db,
      'UPDATE delivery_ledger SET delivered_at = ? WHERE delivery_id = ? AND delivered_at IS NULL',
    ).run(at.toISOString(), deliveryId).changes === 1
  );
}

export function markRecovered(db: Db, deliveryId: number): void {
  statement(db, 'UPDATE delivery_ledger SET recovered = 1 WHERE delivery_id = ?').run(deliveryId);
}

export function readDelivery(db: Db, deliveryId: number): DeliveryRow | null {
  const row = statement(db, 'SELECT * FROM delivery_ledger WHERE delivery_id = ?').get(deliveryId) as
    RawRow | undefined;
  return row === undefined ? null : fromRaw(row);
}

export function listUndelivered(db: Db): DeliveryRow[] {
  return (
    statement(
      db,
      'SELECT * FROM delivery_ledger WHERE delivered_at IS NULL ORDER BY delivery_id',
    ).all() as RawRow[]
  ).map(fromRaw);
}

/** Rows of one key recorded at or after `sinceEpoch` (epoch seconds, so time zones cannot matter). */
export function listDeliveriesSince(db: Db, sessionKey: string, sinceEpoch: number): DeliveryRow[] {
  return (
    statement(
      db,
      'SELECT * FROM delivery_ledger WHERE session_key = ? AND recorded_at_epoch >= ? ORDER BY delivery_id',
    ).all(sessionKey, sinceEpoch) as RawRow[]
  ).map(fromRaw);
}

export function readState(db: Db, name: string): string | null {
  const row = statement(db, 'SELECT value FROM messaging_state WHERE name = ?').get(name) as
    { value: string } | undefined;
  return row?.value ?? null;
}

export function writeState(db: Db, name: string, value: string): void {
  statement(db, 'INSERT OR REPLACE INTO messaging_state (name, value) VALUES (?, ?)').run(name, value);
}

export function deleteState(db: Db, name: string): void {
  statement(db, 'DELETE FROM messaging_state WHERE name = ?').run(name);
}

export function readStreaks(db: Db): Map<string, number> {
  const rows = statement(db, 'SELECT session_key, count FROM restart_streaks').all() as {
    session_key: string;
    count: number;
  }[];
  return new Map(rows.map((r) => [r.session_key, r.count]));
}

export function replaceStreaks(db: Db, streaks: ReadonlyMap<string, number>): void {
  statement(db, 'DELETE FROM restart_streaks').run();
  const put = statement(db, 'INSERT INTO restart_streaks (session_key, count) VALUES (?, ?)');
  for (const [key, count] of streaks) put.run(key, count);
}

export function deleteStreak(db: Db, sessionKey: string): void {
  statement(db, 'DELETE FROM restart_streaks WHERE session_key = ?').run(sessionKey);
}
