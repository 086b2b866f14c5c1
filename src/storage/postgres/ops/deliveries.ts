/** Storage operations on the delivery ledger, messaging state facts and restart streaks, on PostgreSQL. */
import { fromRaw, type DeliveryRow, type NewDelivery, type RawRow } from '../../rows/deliveries.js';
import type { Sql } from '../database.js';

/** Inserts an obligation; a second record for the same turn is ignored. Returns the row's id. */
export async function insertDelivery(sql: Sql, row: NewDelivery, at: Date): Promise<number> {
  await sql.run(
    `INSERT INTO delivery_ledger (turn_id, session_key, session_id, platform, chat_id, thread_id, reply_to,
       text, silent, recorded_at, recorded_at_epoch, delivered_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
     ON CONFLICT (turn_id) DO NOTHING`,
    [
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
      row.silent ? at.toISOString() : null,
    ],
  );
  const found = await sql.row<{ delivery_id: number }>(
    'SELECT delivery_id FROM delivery_ledger WHERE turn_id = $1',
    [row.turn_id],
  );
  return found!.delivery_id;
}

export async function markDelivered(sql: Sql, deliveryId: number, at: Date): Promise<boolean> {
  return (
    (await sql.run(
      'UPDATE delivery_ledger SET delivered_at = $1 WHERE delivery_id = $2 AND delivered_at IS NULL',
      [at.toISOString(), deliveryId],
    )) === 1
  );
}

export async function markRecovered(sql: Sql, deliveryId: number): Promise<void> {
  await sql.run('UPDATE delivery_ledger SET recovered = 1 WHERE delivery_id = $1', [deliveryId]);
}

export async function readDelivery(sql: Sql, deliveryId: number): Promise<DeliveryRow | null> {
  const row = await sql.row<RawRow>('SELECT * FROM delivery_ledger WHERE delivery_id = $1', [deliveryId]);
  return row === null ? null : fromRaw(row);
}

export async function listUndelivered(sql: Sql): Promise<DeliveryRow[]> {
  const rows = await sql.rows<RawRow>(
    'SELECT * FROM delivery_ledger WHERE delivered_at IS NULL ORDER BY delivery_id',
  );
  return rows.map(fromRaw);
}

export async function listDeliveriesSince(
  sql: Sql,
  sessionKey: string,
  sinceEpoch: number,
): Promise<DeliveryRow[]> {
  const rows = await sql.rows<RawRow>(
    'SELECT * FROM delivery_ledger WHERE session_key = $1 AND recorded_at_epoch >= $2 ORDER BY delivery_id',
    [sessionKey, sinceEpoch],
  );
  return rows.map(fromRaw);
}

export async function readState(sql: Sql, name: string): Promise<string | null> {
  const row = await sql.row<{ value: string }>('SELECT value FROM messaging_state WHERE name = $1', [name]);
  return row?.value ?? null;
}

export async function writeState(sql: Sql, name: string, value: string): Promise<void> {
  await sql.run(
    `INSERT INTO messaging_state (name, value) VALUES ($1, $2)
     ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value`,
    [name, value],
  );
}

export async function deleteState(sql: Sql, name: string): Promise<void> {
  await sql.run('DELETE FROM messaging_state WHERE name = $1', [name]);
}

export async function readStreaks(sql: Sql): Promise<Map<string, number>> {
  const rows = await sql.rows<{ session_key: string; count: number }>(
    'SELECT session_key, count FROM restart_streaks',
  );
  return new Map(rows.map((r) => [r.session_key, r.count]));
}

export async function replaceStreaks(sql: Sql, streaks: ReadonlyMap<string, number>): Promise<void> {
  await sql.run('DELETE FROM restart_streaks');
  if (streaks.size === 0) return;
  await sql.run(
    'INSERT INTO restart_streaks (session_key, count) SELECT * FROM unnest($1::text[], $2::int[])',
    [[...streaks.keys()], [...streaks.values()]],
  );
}

export async function deleteStreak(sql: Sql, sessionKey: string): Promise<void> {
  await sql.run('DELETE FROM restart_streaks WHERE session_key = $1', [sessionKey]);
}
