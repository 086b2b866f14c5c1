/**
 * The budget ledger (docs/cost.md, "Budgets"): one row per model call, reserved at its worst case
 * before the call and settled with its real usage after it, in the store, so every sum of spend
 * (a session's, a principal's day, the gateway's day) counts calls in flight at their worst case
 * and a crash loses none of them. Both backends implement it and pass the same shared suite.
 *
 * Terms: a *reservation* is a call's row while the call runs (state `reserved`, counted at its
 * worst case); *settled* it counts the call's real usage; *recovered* is a reservation a crash left
 * open, settled at start-up at its worst case. A session is *paused* when a reservation was refused:
 * the refusal is recorded once (so a chat is told once), and lifted by a raise, a continue-once, a
 * new day (for a per-day limit) or a later call that fits.
 */
import type { BudgetDecision, BudgetSpends } from '../budget/decide.js';

export interface BudgetReservation {
  reservation_id: string;
  session_key: string;
  /** Who the call is for: a local submitter's subject, or `<platform>:<user id>`. */
  principal: string;
  /** The turn the call belongs to (a continue-once exempts the turn that took it). */
  turn_id: string;
  /** The budget day (UTC, `YYYY-MM-DD`) of the call, from the budget clock. */
  day: string;
  at: string;
  /** The call's worst case: its prompt tokens and its max output tokens, priced. */
  tokens: number;
  usd: number;
}

/** A session's budget state: what its own record holds. */
export interface SessionBudgetRecord {
  /** The limit that refused a call, while the session is paused by it. */
  paused: { limit: string; measure: 'tokens' | 'usd'; at: string; day: string } | null;
  /** A continue-once granted and not yet taken by a turn. */
  continue_once: boolean;
  /** The turn a continue-once exempts (the one that took it). */
  exempt_turn: string | null;
  /** The session limit as raised (over the launch's and the profile's); null: not raised. */
  raised: { tokens: number | null; usd: number | null } | null;
}

export interface BudgetLedger {
  /**
   * In one transaction: the session's record and the spends the limits measure are read, `decide`
   * rules (budget/decide.ts), and its ruling is written: the reservation row, the pause, the
   * continue-once taken. Two reservations never both fit where only one does.
   */
  reserveBudget(
    reservation: BudgetReservation,
    decide: (record: SessionBudgetRecord, spends: BudgetSpends) => BudgetDecision,
  ): Promise<BudgetDecision>;
  /** The call's real usage replaces its worst case; a row already settled (or recovered) is kept. */
  settleBudget(reservationId: string, actual: { tokens: number; usd: number }, at: string): Promise<boolean>;
  /** Start-up: every reservation still open is settled at its worst case (`recovered`); how many. */
  recoverBudgetReservations(at: string): Promise<number>;
  /** The session's record (a session never paused, raised or continued has the empty one). */
  sessionBudget(sessionKey: string): Promise<SessionBudgetRecord>;
  /** What the limits measure for one session and principal on `day`. */
  budgetSpends(sessionKey: string, principal: string, day: string): Promise<BudgetSpends>;
  /** Raises the session's limit (an operator's `session.budget.raise`) and lifts its pause. */
  raiseSessionBudget(
    sessionKey: string,
    raised: { tokens: number | null; usd: number | null },
  ): Promise<void>;
  /** Grants one turn past every limit (`session.budget.continue`) and lifts the pause. */
  continueSessionBudget(sessionKey: string): Promise<void>;
}

export const EMPTY_BUDGET_RECORD: SessionBudgetRecord = {
  paused: null,
  continue_once: false,
  exempt_turn: null,
  raised: null,
};
