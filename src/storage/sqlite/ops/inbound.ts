/** Storage operations on the inbound ledger: platform messages already taken (migration 004). */
import type Database from 'better-sqlite3';
import type { InboundRef } from '../../../domain/messaging/adapter.js';
import { statement } from '../statements.js';

type Db = Database.Database;

/** Records the message as taken; a second record of the same message is ignored. */
export function insertTaken(db: Db, ref: InboundRef, sessionKey: string, at: Date): void {
  statement(
    db,
    `INSERT INTO inbound_ledger (platform, chat_id, message_id, session_key, taken_at, taken_at_epoch)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (platform, chat_id, message_id) DO NOTHING`,
  ).run(
    ref.platform,
    ref.chat_id,
    ref.message_id,
    sessionKey,
    at.toISOString(),
    Math.floor(at.getTime() / 1000),
  );
}

export function isTaken(db: Db, ref: InboundRef): boolean {
  return (
    statement(db, 'SELECT 1 FROM inbound_ledger WHERE platform = ? AND chat_id = ? AND message_id = ?').get(
      ref.platform,
      ref.chat_id,
      ref.message_id,
    ) !== undefined
  );
}

/** Forgets rows taken before `beforeEpoch` (epoch seconds); returns how many. */
export function pruneTaken(db: Db, beforeEpoch: number): number {
  return statement(db, 'DELETE FROM inbound_ledger WHERE taken_at_epoch < ?').run(beforeEpoch).changes;
}
