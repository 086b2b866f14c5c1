/**
 * What sessions and principals cost (docs/cost.md): `session.cost` (one session's total, from its
 * route's counters) and `cost.summary` (turns summed per day, principal, provider and model). A
 * principal sees its own turns; an operator sees everyone's and may name one principal.
 */
import { isOperator, type Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { CostQuery, CostSummaryRow, TurnCosts } from '../ports/costs.js';
import type { SessionEntry } from '../vocabulary.js';

export interface SessionCost {
  session_id: string;
  estimated_cost_usd: number;
  cost_status: string;
  tokens: { input: number; output: number; cache_read: number; cache_write: number; total: number };
}

export function sessionCost(logicalId: string, entry: SessionEntry | null): SessionCost {
  return {
    session_id: logicalId,
    estimated_cost_usd: entry?.estimated_cost_usd ?? 0,
    // No turn has called a model yet: nothing is known, and nothing was spent.
    cost_status: entry?.cost_status ?? 'unknown',
    tokens: {
      input: entry?.input_tokens ?? 0,
      output: entry?.output_tokens ?? 0,
      cache_read: entry?.cache_read_tokens ?? 0,
      cache_write: entry?.cache_write_tokens ?? 0,
      total: entry?.total_tokens ?? 0,
    },
  };
}

export interface CostSummary {
  rows: CostSummaryRow[];
  total_usd: number;
  turns: number;
}

export async function costSummary(
  store: TurnCosts,
  principal: Principal,
  query: CostQuery,
): Promise<CostSummary> {
  if (query.principal !== undefined && query.principal !== principal.subject && !isOperator(principal)) {
    throw new GatewayError('permission_denied', "only an operator may read another principal's costs", {
      principal: query.principal,
    });
  }
  const rows = await store.costSummary({
    ...query,
    principal: isOperator(principal) ? query.principal : principal.subject,
  });
  return {
    rows,
    total_usd: rows.reduce((sum, r) => sum + r.cost_usd, 0),
    turns: rows.reduce((sum, r) => sum + r.turns, 0),
  };
}
