/**
 * What a local session has spent and may still spend, through the RPC API: `session.cost`,
 * `cost.summary` (costs.ts) and the budget's `session.budget`, `.raise` and `.continue`
 * (budgets.ts), and the refusal of a prompt while the budget holds the session. The service
 * (service.ts) builds it; the methods reach it as `sessions.spend`.
 */
import type { Principal } from '../auth/principal.js';
import type { BudgetGuard } from '../budget/guard.js';
import { GatewayError } from '../errors.js';
import type { CostQuery } from '../ports/costs.js';
import type { SessionStore } from '../ports/session-store.js';
import { LOCAL_BUDGET_HINT, LocalBudgets, type SessionBudgetView } from './budgets.js';
import { costSummary, sessionCost, type CostSummary, type SessionCost } from './costs.js';
import type { CreationReceipt } from './receipt.js';

export interface SpendDeps {
  sessions: SessionStore;
  /** The budget guard (docs/cost.md, "Budgets"); absent: the gateway keeps no budgets. */
  budget?: BudgetGuard;
  /** Refuses a principal who may not use the session (the service's access fence). */
  access(principal: Principal, logicalId: string): Promise<unknown>;
  /** The session's receipt, validated in this epoch; null when it is invalid. */
  receipt(logicalId: string): Promise<CreationReceipt | null>;
}

export class SessionSpend {
  constructor(private readonly deps: SpendDeps) {}

  /** session.cost: the session's spend so far (costs.ts). */
  async cost(principal: Principal, logicalId: string): Promise<SessionCost> {
    await this.deps.access(principal, logicalId);
    const receipt = await this.deps.receipt(logicalId);
    const entry = receipt ? await this.deps.sessions.lookupBySessionId(receipt.current_session_id) : null;
    return sessionCost(logicalId, entry);
  }

  /** cost.summary: turns summed per day, principal, provider and model (costs.ts). */
  costSummary(principal: Principal, query: CostQuery): Promise<CostSummary> {
    return costSummary(this.deps.sessions, principal, query);
  }

  /** session.budget: spent, left, and whether the budget paused the session. */
  async budget(principal: Principal, logicalId: string): Promise<SessionBudgetView> {
    const { budgets, policy } = await this.budgetOf(principal, logicalId);
    return budgets.view(principal, logicalId, policy);
  }

  /** session.budget.raise (operators): the session's own limit raised. */
  async raiseBudget(
    principal: Principal,
    logicalId: string,
    raised: { tokens?: number | undefined; usd?: number | undefined },
  ): Promise<SessionBudgetView> {
    const { budgets, policy } = await this.budgetOf(principal, logicalId);
    return budgets.raise(principal, logicalId, policy, raised);
  }

  /** session.budget.continue: one more turn past every limit for a paused session. */
  async continueBudget(principal: Principal, logicalId: string): Promise<SessionBudgetView> {
    const { budgets, policy } = await this.budgetOf(principal, logicalId);
    return budgets.continueOnce(principal, logicalId, policy);
  }

  /** prompt.submit to a session its budget paused, while the pause holds: refused. */
  async refuseWhileHeld(principal: Principal, logicalId: string, text: string): Promise<void> {
    if (!this.deps.budget) return;
    const receipt = await this.deps.receipt(logicalId);
    if (!receipt) return;
    await new LocalBudgets(this.deps.sessions, this.deps.budget).refuseWhileHeld(
      principal,
      logicalId,
      receipt.policy,
      text,
      LOCAL_BUDGET_HINT,
    );
  }

  private async budgetOf(principal: Principal, logicalId: string) {
    await this.deps.access(principal, logicalId);
    const receipt = await this.deps.receipt(logicalId);
    if (!receipt) throw new GatewayError('not_found', `session ${logicalId} has no valid receipt`);
    if (!this.deps.budget) throw new GatewayError('not_found', 'this gateway keeps no budgets');
    return { budgets: new LocalBudgets(this.deps.sessions, this.deps.budget), policy: receipt.policy };
  }
}
