/**
 * The gateway's budget guard (docs/cost.md, "Budgets"), built once from `budgets` in config.yaml and
 * shared by local and chat-platform turns, and its clock.
 *
 * The clock is the system's, unless GATEHOUSE_TEST_CLOCK_OFFSET_S moves it by that many seconds: a
 * test's way to reach tomorrow's budget day without waiting for it. It moves the budget day only
 * (nothing else reads it), and a daemon listening beyond loopback refuses to start with it set.
 */
import type { GatehouseConfig } from '../config-schema.js';
import { budgetLimits } from '../config-budgets.js';
import { DaemonError } from '../errors.js';
import { isLoopback } from '../config-listener.js';
import { BudgetGuard } from '../../domain/budget/guard.js';
import type { BudgetLedger } from '../../domain/ports/budgets.js';

export const CLOCK_OFFSET_ENV = 'GATEHOUSE_TEST_CLOCK_OFFSET_S';

/** The budget clock: now, moved by GATEHOUSE_TEST_CLOCK_OFFSET_S when a test sets it. */
export function budgetClock(config: GatehouseConfig, env: NodeJS.ProcessEnv): () => Date {
  const raw = env[CLOCK_OFFSET_ENV];
  if (raw === undefined || raw === '') return () => new Date();
  const offset = Number(raw);
  if (!Number.isInteger(offset))
    throw new DaemonError(
      'start_failed',
      `${CLOCK_OFFSET_ENV} must be a whole number of seconds, not "${raw}"`,
    );
  if (!isLoopback(config.listener.host))
    throw new DaemonError(
      'start_failed',
      `${CLOCK_OFFSET_ENV} is for tests only, and this daemon listens on ${config.listener.host}: unset it`,
    );
  return () => new Date(Date.now() + offset * 1000);
}

/** The guard every turn's model passes through. Without `budgets`, it holds no profile limit. */
export function budgetGuardOf(
  config: GatehouseConfig,
  env: NodeJS.ProcessEnv,
  ledger: BudgetLedger,
): BudgetGuard {
  const budgets = config.budgets;
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
    budgetClock(config, env),
  );
}
