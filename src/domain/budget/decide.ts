/**
 * The budget's rulings (docs/cost.md, "Budgets"), pure: given what a session's record holds and what
 * the limits measure so far, does a model call's worst case fit, and what is written. The stores run
 * it inside the transaction that writes its ruling (ports/budgets.ts).
 */
import type { SessionBudgetRecord } from '../ports/budgets.js';

/** The limits, in the order they are checked: a session's total, a principal's day, the gateway's day. */
export const BUDGET_LIMITS = ['session', 'principal_daily', 'daily'] as const;
export type BudgetLimitName = (typeof BUDGET_LIMITS)[number];
export type BudgetMeasure = 'tokens' | 'usd';

/** One limit: tokens and/or US dollars; null: that measure is not limited. */
export interface BudgetAmount {
  tokens: number | null;
  usd: number | null;
}
export type BudgetLimits = Record<BudgetLimitName, BudgetAmount>;

export interface Spend {
  tokens: number;
  usd: number;
}
export type BudgetSpends = Record<BudgetLimitName, Spend>;

/** The share of a limit past which a call warns, once, as it crosses it. */
export const WARN_SHARE = 0.8;

export interface BudgetWarning {
  limit: BudgetLimitName;
  measure: BudgetMeasure;
  /** Spent with this call's worst case. */
  spent: number;
  limit_value: number;
}

export type BudgetDecision =
  | {
      kind: 'reserved';
      /** The call is past the limits by a continue-once: reserved and counted, not checked. */
      exempt: boolean;
      /** A continue-once granted before is taken by this call's turn. */
      takes_continue: boolean;
      /** The session was paused, and this call fits: the pause is lifted. */
      lifted: boolean;
      warnings: BudgetWarning[];
    }
  | {
      kind: 'refused';
      limit: BudgetLimitName;
      measure: BudgetMeasure;
      /** Spent before this call. */
      spent: number;
      limit_value: number;
      /** The call's worst case in that measure. */
      worst: number;
      /** The session was not paused by this limit before: now it is, and its chat is told. */
      newly_paused: boolean;
    };

/** The session limit in force: the raise's measures over the launch's (or the profile's). */
export function sessionLimit(limits: BudgetLimits, record: SessionBudgetRecord): BudgetAmount {
  const raised = record.raised;
  if (raised === null) return limits.session;
  return { tokens: raised.tokens ?? limits.session.tokens, usd: raised.usd ?? limits.session.usd };
}

export function decideReservation(
  record: SessionBudgetRecord,
  spends: BudgetSpends,
  limits: BudgetLimits,
  call: { turn_id: string; day: string; tokens: number; usd: number },
): BudgetDecision {
  const exemptTurn = record.exempt_turn === call.turn_id;
  if (exemptTurn || record.continue_once)
    return { kind: 'reserved', exempt: true, takes_continue: !exemptTurn, lifted: false, warnings: [] };
  const inForce: BudgetLimits = { ...limits, session: sessionLimit(limits, record) };
  const warnings: BudgetWarning[] = [];
  for (const limit of BUDGET_LIMITS) {
    for (const measure of ['tokens', 'usd'] as const) {
      const value = inForce[limit][measure];
      if (value === null) continue;
      const spent = spends[limit][measure];
      const worst = call[measure];
      if (spent + worst > value) {
        const paused = record.paused;
        const newly =
          paused === null ||
          paused.limit !== limit ||
          paused.measure !== measure ||
          (limit !== 'session' && paused.day !== call.day);
        return { kind: 'refused', limit, measure, spent, limit_value: value, worst, newly_paused: newly };
      }
      if (spent < WARN_SHARE * value && spent + worst >= WARN_SHARE * value)
        warnings.push({ limit, measure, spent: spent + worst, limit_value: value });
    }
  }
  return { kind: 'reserved', exempt: false, takes_continue: false, lifted: record.paused !== null, warnings };
}

/** Whether `amount` stays within `ceiling` in each measure both name (null in `amount`: the ceiling's). */
export function withinLimit(
  amount: BudgetAmount,
  ceiling: BudgetAmount,
): { ok: true } | { ok: false; measure: BudgetMeasure } {
  for (const measure of ['tokens', 'usd'] as const) {
    const top = ceiling[measure];
    if (top === null) continue;
    const asked = amount[measure];
    if (asked !== null && asked > top) return { ok: false, measure };
  }
  return { ok: true };
}
