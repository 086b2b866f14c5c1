/** Storage operations on the budget tables on PostgreSQL (as SQLite's ops/budgets.ts). */
import type { BudgetDecision, BudgetSpends } from '../../../domain/budget/decide.js';
import type { BudgetReservation, SessionBudgetRecord } from '../../../domain/ports/budgets.js';
import type { Sql } from '../database.js';
import { budgetRecordOf, spendsOf, spendsSql, type BudgetSessionRow } from '../../rows/budgets.js';

const SPENDS = spendsSql({ session: '$1', day: '$2', principal: '$3' }).replace(
  /SUM\(([^)]*)\)/g,
  'SUM($1)::float8',
);

/**
 * Reservations are ruled one at a time across every instance on the database: the lock is the
 * transaction's, so two instances never both fit a call where only one fits.
 */
export async function lockBudgets(sql: Sql): Promise<void> {
  await sql.run(`SELECT pg_advisory_xact_lock(hashtext('gatehouse.budgets'))`);
}

export async function readBudgetSession(sql: Sql, sessionKey: string): Promise<SessionBudgetRecord> {
  return budgetRecordOf(
    await sql.row<BudgetSessionRow>('SELECT * FROM budget_sessions WHERE session_key = $1', [sessionKey]),
  );
}

export async function readSpends(
  sql: Sql,
  sessionKey: string,
  principal: string,
  day: string,
): Promise<BudgetSpends> {
  return spendsOf((await sql.row<Record<string, unknown>>(SPENDS, [sessionKey, day, principal])) ?? {});
}

async function ensureSession(sql: Sql, sessionKey: string): Promise<void> {
  await sql.run('INSERT INTO budget_sessions (session_key) VALUES ($1) ON CONFLICT DO NOTHING', [sessionKey]);
}

export async function writeDecision(sql: Sql, r: BudgetReservation, decision: BudgetDecision): Promise<void> {
  if (decision.kind === 'refused') {
    await ensureSession(sql, r.session_key);
    await sql.run(
      `UPDATE budget_sessions SET paused_limit = $1, paused_measure = $2, paused_at = $3, paused_day = $4,
         paused_worst_tokens = $5, paused_worst_usd = $6
       WHERE session_key = $7`,
      [decision.limit, decision.measure, r.at, r.day, r.tokens, r.usd, r.session_key],
    );
    return;
  }
  await sql.run(
    `INSERT INTO budget_calls (reservation_id, session_key, principal, turn_id, day, reserved_at,
       reserved_tokens, reserved_usd, state, tokens, usd)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'reserved', $7, $8)`,
    [r.reservation_id, r.session_key, r.principal, r.turn_id, r.day, r.at, r.tokens, r.usd],
  );
  if (decision.takes_continue)
    await sql.run(
      'UPDATE budget_sessions SET continue_once = FALSE, exempt_turn = $1 WHERE session_key = $2',
      [r.turn_id, r.session_key],
    );
  if (decision.lifted) await liftPause(sql, r.session_key);
}

async function liftPause(sql: Sql, sessionKey: string): Promise<void> {
  await sql.run(
    `UPDATE budget_sessions SET paused_limit = NULL, paused_measure = NULL, paused_at = NULL, paused_day = NULL,
       paused_worst_tokens = NULL, paused_worst_usd = NULL
     WHERE session_key = $1`,
    [sessionKey],
  );
}

export async function settleReservation(
  sql: Sql,
  reservationId: string,
  actual: { tokens: number; usd: number },
  at: string,
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE budget_calls SET state = 'settled', settled_at = $1, tokens = $2, usd = $3
     WHERE reservation_id = $4 AND state = 'reserved'`,
    [at, actual.tokens, actual.usd, reservationId],
  );
  return changed === 1;
}

export async function recoverReservations(sql: Sql, at: string): Promise<number> {
  return sql.run(`UPDATE budget_calls SET state = 'recovered', settled_at = $1 WHERE state = 'reserved'`, [
    at,
  ]);
}

export async function raiseSession(
  sql: Sql,
  sessionKey: string,
  raised: { tokens: number | null; usd: number | null },
): Promise<void> {
  await ensureSession(sql, sessionKey);
  await sql.run(
    'UPDATE budget_sessions SET raised = TRUE, raised_tokens = $1, raised_usd = $2 WHERE session_key = $3',
    [raised.tokens, raised.usd, sessionKey],
  );
  await liftPause(sql, sessionKey);
}

export async function continueSession(sql: Sql, sessionKey: string): Promise<void> {
  await ensureSession(sql, sessionKey);
  await sql.run(
    'UPDATE budget_sessions SET continue_once = TRUE, exempt_turn = NULL WHERE session_key = $1',
    [sessionKey],
  );
  await liftPause(sql, sessionKey);
}
