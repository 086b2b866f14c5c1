/**
 * The budget's rulings (docs/cost.md, "Budgets"), pure: given what a session's record holds and what
 * the limits measure so far, does a model call's worst case fit, and what is written. The stores run
 * it inside the transaction that writes its ruling (ports/budgets.ts).
 */

/** A session's budget state: what its own record holds (ports/budgets.ts). */
export interface SessionBudgetRecord {
  /** The limit that refused a call, while the session is paused by it. */
  paused: {
    limit: string;
    measure: 'tokens' | 'usd';
    at: string;
    day: string;
    /** The refused call's worst case: the next call's is no smaller (null: recorded before 025). */
    worst: Spend | null;
  } | null;
  /** A continue-once granted and not yet taken by a turn. */
  continue_once: boolean;
  /** The turn a continue-once exempts (the one that took it). */
  exempt_turn: string | null;
  /** The session limit as raised (over the launch's and the profile's); null: not raised. */
  raised: { tokens: number | null; usd: number | null } | null;
}

export const EMPTY_BUDGET_RECORD: SessionBudgetRecord = {
  paused: null,
  continue_once: false,
  exempt_turn: null,
  raised: null,
};

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

/** Why a paused session takes no prompt now: the limit that paused it, which still has no room. */
export interface PauseHold {
  limit: BudgetLimitName;
  measure: BudgetMeasure;
  spent: number;
  limit_value: number;
}

/**
 * Whether a session its budget paused still cannot run a turn: it is paused, no continue-once is
 * granted, and some limit in force has no room for the turn's first call at its least: the call the
 * pause refused (its history only grows; compression aside), and at least the output cap and the
 * new prompt (`floor`). A pause a new day, a raise or a higher configured limit has made room for
 * holds no more: the turn is admitted and its first call decides, as any call does.
 */
export function pauseHolds(
  record: SessionBudgetRecord,
  spends: BudgetSpends,
  limits: BudgetLimits,
  floor: Spend,
): PauseHold | null {
  if (record.paused === null || record.continue_once) return null;
  const worst = record.paused.worst;
  const least: Spend = {
    tokens: Math.max(floor.tokens, worst?.tokens ?? 0),
    usd: Math.max(floor.usd, worst?.usd ?? 0),
  };
  const inForce: BudgetLimits = { ...limits, session: sessionLimit(limits, record) };
  for (const limit of BUDGET_LIMITS) {
    for (const measure of ['tokens', 'usd'] as const) {
      const value = inForce[limit][measure];
      if (value === null) continue;
      const spent = spends[limit][measure];
      if (spent + least[measure] > value) return { limit, measure, spent, limit_value: value };
    }
  }
  return null;
}
