/**
 * A local session's budget through the RPC API (docs/cost.md, "Budgets"): `session.budget` reads
 * what is spent and what is left, `session.budget.raise` (operators) raises the session's own limit,
 * `session.budget.continue` lets a paused session run one more turn past every limit.
 */
import { isOperator, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import { holdMessage, type BudgetGuard } from '../budget/guard.js';
import { sessionLimit, type BudgetAmount, type BudgetLimits, type BudgetSpends } from '../budget/decide.js';
import type { SessionStore } from '../ports/session-store.js';
import type { LaunchPolicy } from './launch-policy.js';
import { localSessionKey } from './receipt.js';

/** What a local session's user may do when its budget refuses a call. */
export const LOCAL_BUDGET_HINT =
  'An operator may raise it (session.budget.raise), or let the session run one more turn (session.budget.continue).';

export interface SessionBudgetView {
  session_id: string;
  /** The budget day (UTC) the daily spends are of. */
  day: string;
  /** The limits in force for this session and the caller (null: not limited). */
  limits: BudgetLimits;
  /** Spent so far, calls in flight at their worst case: the session's total, the caller's day, the gateway's day. */
  spent: BudgetSpends;
  /** Why the session is paused, while it is. */
  paused: { reason: 'budget_exhausted'; limit: string; measure: string; at: string } | null;
  /** A continue-once granted and not yet taken by a turn. */
  continue_once: boolean;
}

export class LocalBudgets {
  constructor(
    private readonly store: SessionStore,
    private readonly guard: BudgetGuard,
  ) {}

  async view(principal: Principal, logicalId: string, policy: LaunchPolicy): Promise<SessionBudgetView> {
    const key = localSessionKey(logicalId);
    const record = await this.store.sessionBudget(key);
    const day = this.guard.today();
    const profile = this.guard.limitsFor(policy.budget ?? null);
    return {
      session_id: logicalId,
      day,
      limits: { ...profile, session: sessionLimit(profile, record) },
      spent: await this.store.budgetSpends(key, principal.subject, day),
      paused: record.paused
        ? {
            reason: 'budget_exhausted',
            limit: record.paused.limit,
            measure: record.paused.measure,
            at: record.paused.at,
          }
        : null,
      continue_once: record.continue_once,
    };
  }

  /** Operators only: the session's limit becomes `raised` (each measure given; the others stay). */
  async raise(principal: Principal, logicalId: string, policy: LaunchPolicy, raised: Partial<BudgetAmount>) {
    if (!isOperator(principal))
      throw new GatewayError('permission_denied', "only an operator may raise a session's budget", {
        capability: 'session:operator',
      });
    const key = localSessionKey(logicalId);
    const current = sessionLimit(
      this.guard.limitsFor(policy.budget ?? null),
      await this.store.sessionBudget(key),
    );
    await this.store.raiseSessionBudget(key, {
      tokens: raised.tokens ?? current.tokens,
      usd: raised.usd ?? current.usd,
    });
    return this.view(principal, logicalId, policy);
  }

  /**
   * prompt.submit to a session its budget paused: refused with `budget_paused` while the limit that
   * paused it has no room for even the smallest turn (guard.pauseHold), so the prompt is not queued
   * behind a pause that may last until tomorrow. Admitted once a raise, a continue-once, a new day
   * or a higher limit leaves room.
   */
  async refuseWhileHeld(
    principal: Principal,
    logicalId: string,
    policy: LaunchPolicy,
    text: string,
    hint: string,
  ) {
    const hold = await this.guard.pauseHold(
      localSessionKey(logicalId),
      principal.subject,
      policy.budget ?? null,
      text,
    );
    if (hold === null) return;
    throw new GatewayError('budget_paused', `${holdMessage(hold)} ${hint}`, {
      session_id: logicalId,
      limit: hold.limit,
      measure: hold.measure,
      spent: hold.spent,
      limit_value: hold.limit_value,
    });
  }

  /** One more turn past every limit, for a session its budget paused. */
  async continueOnce(principal: Principal, logicalId: string, policy: LaunchPolicy) {
    const key = localSessionKey(logicalId);
    const record = await this.store.sessionBudget(key);
    if (record.paused === null)
      throw new GatewayError(
        'budget_not_paused',
        'the session is not paused by its budget: there is nothing to continue',
        {
          session_id: logicalId,
        },
      );
    await this.store.continueSessionBudget(key);
    return this.view(principal, logicalId, policy);
  }
}
