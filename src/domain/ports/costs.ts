/**
 * What turns cost, as the store keeps it (docs/cost.md): one row per turn that called a model, in the
 * transaction that settles the turn (a local settlement, a chat turn's end), summed here per day,
 * principal, provider and model. Both backends implement it and pass the same shared suite.
 */
import type { CostStatus } from '../vocabulary.js';

/** The turns of one day, principal, provider and model. */
export interface CostSummaryRow {
  /** UTC day of the settlement, `YYYY-MM-DD`. */
  day: string;
  /** Who submitted the turns: a local submitter's subject (`native:owner`), or `<platform>:<user id>`. */
  principal: string;
  provider: string;
  model: string;
  turns: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
  /** The least certain status among the turns: unknown over estimated over reported. */
  cost_status: CostStatus;
}

export interface CostQuery {
  /** First and last UTC day included (`YYYY-MM-DD`); absent: unbounded. */
  from_day?: string | undefined;
  to_day?: string | undefined;
  /** Only this principal's turns. */
  principal?: string | undefined;
}

export interface TurnCosts {
  costSummary(query: CostQuery): Promise<CostSummaryRow[]>;
}

/** The UTC day of an ISO time. */
export function dayOf(iso: string): string {
  return iso.slice(0, 10);
}
