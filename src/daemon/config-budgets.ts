/**
 * The `budgets` section (docs/cost.md, "Budgets"): what the gateway's profile lets a session, a
 * principal in a day and the whole gateway in a day spend, in tokens and/or US dollars, and the
 * output cap every model call is reserved (and sent) with. Absent: no budget, nothing reserved.
 */
import { z } from 'zod';
import type { BudgetAmount, BudgetLimits } from '../domain/budget/decide.js';

const amountSchema = (where: string) =>
  z
    .strictObject({
      tokens: z
        .number({ error: `budgets.${where}.tokens must be a whole number of tokens` })
        .int({ error: `budgets.${where}.tokens must be a whole number of tokens` })
        .min(1, { error: `budgets.${where}.tokens must be at least 1` })
        .optional(),
      usd: z
        .number({ error: `budgets.${where}.usd must be US dollars, a number` })
        .positive({ error: `budgets.${where}.usd must be more than 0` })
        .optional(),
    })
    .refine((a) => a.tokens !== undefined || a.usd !== undefined, {
      error: `budgets.${where} must name tokens, usd or both`,
    });

export const budgetsSchema = z
  .strictObject({
    /** Each session's total. A session may lower it at creation (`budget`), never raise it. */
    session: amountSchema('session').optional(),
    /** Each principal's spend in one UTC day (a local submitter, or `<platform>:<user id>`). */
    principal_daily: amountSchema('principal_daily').optional(),
    /** The whole gateway's spend in one UTC day. */
    daily: amountSchema('daily').optional(),
    /** Every model call is sent with this output cap, and reserved at it beside its prompt. */
    max_output_tokens: z
      .number({ error: 'budgets.max_output_tokens must be a whole number of tokens' })
      .int({ error: 'budgets.max_output_tokens must be a whole number of tokens' })
      .min(16, { error: 'budgets.max_output_tokens must be at least 16' })
      .max(1_000_000, { error: 'budgets.max_output_tokens must be at most 1000000' })
      .default(4096),
  })
  .optional();

export type BudgetsConfig = NonNullable<z.output<typeof budgetsSchema>>;

function amount(a: { tokens?: number | undefined; usd?: number | undefined } | undefined): BudgetAmount {
  return { tokens: a?.tokens ?? null, usd: a?.usd ?? null };
}

/** The profile's limits, as the budget guard checks them. */
export function budgetLimits(config: BudgetsConfig): BudgetLimits {
  return {
    session: amount(config.session),
    principal_daily: amount(config.principal_daily),
    daily: amount(config.daily),
  };
}
