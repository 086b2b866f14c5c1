/** Storage operations on the inbound ledger on PostgreSQL: platform messages already taken. */
import type { InboundRef } from '../../../domain/messaging/adapter.js';
import type { InboundOutcome } from '../../../domain/ports/delivery-ledger.js';
import type { Sql } from '../database.js';

export async function insertTaken(
  sql: Sql,
  ref: InboundRef,
  sessionKey: string,
  at: Date,
  outcome: InboundOutcome,
): Promise<void> {
  await sql.run(
    `INSERT INTO inbound_ledger (platform, chat_id, message_id, session_key, taken_at, taken_at_epoch, outcome)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (platform, chat_id, message_id) DO UPDATE SET outcome = EXCLUDED.outcome`,
    [
      ref.platform,
      ref.chat_id,
      ref.message_id,
      sessionKey,
      at.toISOString(),
      Math.floor(at.getTime() / 1000),
      outcome,
    ],
  );
}

export async function readOutcome(sql: Sql, ref: InboundRef): Promise<InboundOutcome | null> {
  const row = await sql.row<{ outcome: InboundOutcome }>(
    'SELECT outcome FROM inbound_ledger WHERE platform = $1 AND chat_id = $2 AND message_id = $3',
    [ref.platform, ref.chat_id, ref.message_id],
  );
  return row?.outcome ?? null;
}

export function pruneTaken(sql: Sql, beforeEpoch: number): Promise<number> {
  return sql.run('DELETE FROM inbound_ledger WHERE taken_at_epoch < $1', [beforeEpoch]);
}
