/**
 * A local session's budget through the RPC API (docs/cost.md, "Budgets"): `session.budget` reads
 * what is spent and what is left, `session.budget.raise` (operators) raises the session's own limit,
 * `session.budget.continue` lets a paused session run one more turn past every limit.
 */
import { isOperator, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { BudgetGuard } from '../budget/guard.js';
import { sessionLimit, type BudgetAmount, type BudgetLimits, type BudgetSpends } from '../budget/decide.js';
import type { SessionStore } from '../ports/session-store.js';
import type { LaunchPolicy } from './launch-policy.js';
import { localSessionKey } from './receipt.js';

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
