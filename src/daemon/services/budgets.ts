/**
 * The gateway's budget guard (docs/cost.md, "Budgets"), built once from `budgets` in config.yaml and
 * shared by local and chat-platform turns, and its clock.
 *
 * The budget day is read on the daemon's clock (test-clock.ts): the system's, except in tests
 * (GATEHOUSE_TEST_CLOCK, the same file the scheduled jobs read).
 */
import type { GatehouseConfig } from '../config-schema.js';
import { budgetLimits } from '../config-budgets.js';
import { daemonClock } from '../test-clock.js';
import { BudgetGuard } from '../../domain/budget/guard.js';
import type { BudgetLedger } from '../../domain/ports/budgets.js';

/** The guard every turn's model passes through. Without `budgets`, it holds no profile limit. */
export function budgetGuardOf(
  config: GatehouseConfig,
  env: NodeJS.ProcessEnv,
  ledger: BudgetLedger,
): BudgetGuard {
  const budgets = config.budgets;
  const clock = daemonClock(env);
  return new BudgetGuard(
    ledger,
    {
      limits: budgets
        ? budgetLimits(budgets)
        : {
            session: { tokens: null, usd: null },
            principal_daily: { tokens: null, usd: null },
            daily: { tokens: null, usd: null },
          },
      maxOutputTokens: budgets?.max_output_tokens ?? 4096,
    },
    () => clock.now(),
  );
}
