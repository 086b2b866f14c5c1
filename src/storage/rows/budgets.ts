/** What both backends share about the budget tables (migration 019): the rows read, as the domain reads them. */
import {
  EMPTY_BUDGET_RECORD,
  type BudgetSpends,
  type SessionBudgetRecord,
} from '../../domain/budget/decide.js';

/**
 * The three spends in one pass over the calls of the session or of the day: a session's total, its
 * principal's day, the gateway's day. `{session}`, `{day}` and `{principal}` stand for each backend's
 * own parameters (budgetSql).
 */
const SPENDS_SQL = `SELECT
    COALESCE(SUM(CASE WHEN session_key = {session} THEN tokens ELSE 0 END), 0) AS session_tokens,
    COALESCE(SUM(CASE WHEN session_key = {session} THEN usd ELSE 0 END), 0) AS session_usd,
    COALESCE(SUM(CASE WHEN day = {day} AND principal = {principal} THEN tokens ELSE 0 END), 0) AS principal_tokens,
    COALESCE(SUM(CASE WHEN day = {day} AND principal = {principal} THEN usd ELSE 0 END), 0) AS principal_usd,
    COALESCE(SUM(CASE WHEN day = {day} THEN tokens ELSE 0 END), 0) AS daily_tokens,
    COALESCE(SUM(CASE WHEN day = {day} THEN usd ELSE 0 END), 0) AS daily_usd
  FROM budget_calls WHERE session_key = {session} OR day = {day}`;

/** SPENDS_SQL with the backend's parameters: SQLite's `@name`, PostgreSQL's `$1`..`$3`. */
export function spendsSql(params: { session: string; day: string; principal: string }): string {
  return SPENDS_SQL.replace(
    /\{(session|day|principal)\}/g,
    (_, name: 'session' | 'day' | 'principal') => params[name],
  );
}

export function spendsOf(row: Record<string, unknown>): BudgetSpends {
  const n = (name: string) => Number(row[name] ?? 0);
  return {
    session: { tokens: n('session_tokens'), usd: n('session_usd') },
    principal_daily: { tokens: n('principal_tokens'), usd: n('principal_usd') },
    daily: { tokens: n('daily_tokens'), usd: n('daily_usd') },
  };
}

export interface BudgetSessionRow {
  paused_limit: string | null;
  paused_measure: string | null;
  paused_at: string | null;
  paused_day: string | null;
  /** Migration 025: the refused call's worst case (null on a pause recorded before it). */
  paused_worst_tokens?: number | string | null;
  paused_worst_usd?: number | null;
  continue_once: number | boolean;
  exempt_turn: string | null;
  raised_tokens: number | string | null;
  raised_usd: number | null;
  raised: number | boolean;
}

export function budgetRecordOf(row: BudgetSessionRow | undefined | null): SessionBudgetRecord {
  if (!row) return EMPTY_BUDGET_RECORD;
  return {
    paused:
      row.paused_limit === null
        ? null
        : {
            limit: row.paused_limit,
            measure: row.paused_measure === 'usd' ? 'usd' : 'tokens',
            at: row.paused_at ?? '',
            day: row.paused_day ?? '',
            worst:
              row.paused_worst_tokens === null || row.paused_worst_tokens === undefined
                ? null
                : { tokens: Number(row.paused_worst_tokens), usd: Number(row.paused_worst_usd ?? 0) },
          },
    continue_once: Boolean(row.continue_once),
    exempt_turn: row.exempt_turn,
    raised: row.raised
      ? {
          tokens: row.raised_tokens === null ? null : Number(row.raised_tokens),
          usd: row.raised_usd === null ? null : Number(row.raised_usd),
        }
      : null,
  };
}
