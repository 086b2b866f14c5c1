/** Storage operations on the inbound ledger: platform messages already taken (migrations 004, 005). */
import type Database from 'better-sqlite3';
import type { InboundRef } from '../../../domain/messaging/adapter.js';
import type { InboundOutcome } from '../../../domain/ports/delivery-ledger.js';
import { statement } from '../statements.js';

type Db = Database.Database;

/**
 * Records the message as taken, with what became of it. A message taken before keeps its first
 * `taken_at` (retention counts from there) and gets the new outcome.
 */
export function insertTaken(
  db: Db,
  ref: InboundRef,
  sessionKey: string,
  at: Date,
  outcome: InboundOutcome,
): void {
  statement(
    db,
    `INSERT INTO inbound_ledger (platform, chat_id, message_id, session_key, taken_at, taken_at_epoch, outcome)
     VALUES (?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (platform, chat_id, message_id) DO UPDATE SET outcome = excluded.outcome`,
  ).run(
    ref.platform,
    ref.chat_id,
    ref.message_id,
    sessionKey,
    at.toISOString(),
    Math.floor(at.getTime() / 1000),
    outcome,
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

/** What became of a taken message; null when it was never taken. */
export function readOutcome(db: Db, ref: InboundRef): InboundOutcome | null {
  const row = statement(
    db,
    'SELECT outcome FROM inbound_ledger WHERE platform = ? AND chat_id = ? AND message_id = ?',
  ).get(ref.platform, ref.chat_id, ref.message_id) as { outcome: InboundOutcome } | undefined;
  return row?.outcome ?? null;
}

/** Forgets rows taken before `beforeEpoch` (epoch seconds); returns how many. */
export function pruneTaken(db: Db, beforeEpoch: number): number {
  return statement(db, 'DELETE FROM inbound_ledger WHERE taken_at_epoch < ?').run(beforeEpoch).changes;
}
