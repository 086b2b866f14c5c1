/** Storage operations on the budget tables (migration 019, ports/budgets.ts). Each takes the handle and holds its SQL. */
import type Database from 'better-sqlite3';
import type { BudgetDecision, BudgetSpends } from '../../../domain/budget/decide.js';
import type { BudgetReservation, SessionBudgetRecord } from '../../../domain/ports/budgets.js';
import { budgetRecordOf, spendsOf, spendsSql, type BudgetSessionRow } from '../../rows/budgets.js';
import { statement } from '../statements.js';

type Db = Database.Database;

const SPENDS = spendsSql({ session: '@session', day: '@day', principal: '@principal' });

export function readBudgetSession(db: Db, sessionKey: string): SessionBudgetRecord {
  return budgetRecordOf(
    statement(db, 'SELECT * FROM budget_sessions WHERE session_key = ?').get(sessionKey) as
      BudgetSessionRow | undefined,
  );
}

export function readSpends(db: Db, sessionKey: string, principal: string, day: string): BudgetSpends {
  return spendsOf(
    statement(db, SPENDS).get({ session: sessionKey, day, principal }) as Record<string, unknown>,
  );
}

function ensureSession(db: Db, sessionKey: string): void {
  statement(db, 'INSERT INTO budget_sessions (session_key) VALUES (?) ON CONFLICT DO NOTHING').run(
    sessionKey,
  );
}

/** Writes a ruling of decideReservation: the row, the continue-once taken, the pause set or lifted. */
export function writeDecision(db: Db, r: BudgetReservation, decision: BudgetDecision): void {
  if (decision.kind === 'refused') {
    ensureSession(db, r.session_key);
    statement(
      db,
      `UPDATE budget_sessions SET paused_limit = ?, paused_measure = ?, paused_at = ?, paused_day = ?,
         paused_worst_tokens = ?, paused_worst_usd = ?
       WHERE session_key = ?`,
    ).run(decision.limit, decision.measure, r.at, r.day, r.tokens, r.usd, r.session_key);
    return;
  }
  statement(
    db,
    `INSERT INTO budget_calls (reservation_id, session_key, principal, turn_id, day, reserved_at,
       reserved_tokens, reserved_usd, state, tokens, usd)
     VALUES (@reservation_id, @session_key, @principal, @turn_id, @day, @at, @tokens, @usd, 'reserved', @tokens, @usd)`,
  ).run(r);
  if (decision.takes_continue)
    statement(db, 'UPDATE budget_sessions SET continue_once = 0, exempt_turn = ? WHERE session_key = ?').run(
      r.turn_id,
      r.session_key,
    );
  if (decision.lifted) liftPause(db, r.session_key);
}

function liftPause(db: Db, sessionKey: string): void {
  statement(
    db,
    `UPDATE budget_sessions SET paused_limit = NULL, paused_measure = NULL, paused_at = NULL, paused_day = NULL,
       paused_worst_tokens = NULL, paused_worst_usd = NULL
     WHERE session_key = ?`,
  ).run(sessionKey);
}

export function settleReservation(
  db: Db,
  reservationId: string,
  actual: { tokens: number; usd: number },
  at: string,
): boolean {
  return (
    statement(
      db,
      `UPDATE budget_calls SET state = 'settled', settled_at = ?, tokens = ?, usd = ?
       WHERE reservation_id = ? AND state = 'reserved'`,
    ).run(at, actual.tokens, actual.usd, reservationId).changes === 1
  );
}

/** Every open reservation counts its worst case for good (it already does: only its state changes). */
export function recoverReservations(db: Db, at: string): number {
  return statement(
    db,
    `UPDATE budget_calls SET state = 'recovered', settled_at = ? WHERE state = 'reserved'`,
  ).run(at).changes;
}

export function raiseSession(
  db: Db,
  sessionKey: string,
  raised: { tokens: number | null; usd: number | null },
): void {
  ensureSession(db, sessionKey);
  statement(
    db,
    'UPDATE budget_sessions SET raised = 1, raised_tokens = ?, raised_usd = ? WHERE session_key = ?',
  ).run(raised.tokens, raised.usd, sessionKey);
  liftPause(db, sessionKey);
}

export function continueSession(db: Db, sessionKey: string): void {
  ensureSession(db, sessionKey);
  statement(db, 'UPDATE budget_sessions SET continue_once = 1, exempt_turn = NULL WHERE session_key = ?').run(
    sessionKey,
  );
  liftPause(db, sessionKey);
}
