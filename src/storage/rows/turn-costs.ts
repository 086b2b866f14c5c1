/** What both backends share about turn_costs rows: the record written, and the summary's shape. */
import type { CostSummaryRow } from '../../domain/ports/costs.js';
import { dayOf } from '../../domain/ports/costs.js';
import type { UsageUpdate } from '../../domain/ports/session-store.js';

/** One settled turn's cost, as written; null when the turn called no model (nothing priced). */
export interface TurnCostRecord {
  turn_id: string;
  session_key: string;
  principal: string;
  provider: string;
  model: string;
  day: string;
  settled_at: string;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  cost_usd: number;
  cost_status: string;
}

export const TURN_COST_COLUMNS = [
  'turn_id',
  'session_key',
  'principal',
  'provider',
  'model',
  'day',
  'settled_at',
  'input_tokens',
  'output_tokens',
  'cache_read_tokens',
  'cache_write_tokens',
  'cost_usd',
  'cost_status',
] as const satisfies readonly (keyof TurnCostRecord)[];

export function turnCostRecord(
  turn: { turn_id: string; session_key: string; principal: string; at: string },
  usage: UsageUpdate,
): TurnCostRecord | null {
  if (usage.cost_status === undefined) return null;
  return {
    turn_id: turn.turn_id,
    session_key: turn.session_key,
    principal: turn.principal,
    provider: usage.provider ?? 'unknown',
    model: usage.model ?? 'unknown',
    day: dayOf(turn.at),
    settled_at: turn.at,
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_read_tokens: usage.cache_read_tokens ?? 0,
    cache_write_tokens: usage.cache_write_tokens ?? 0,
    cost_usd: usage.cost_usd ?? 0,
    cost_status: usage.cost_status,
  };
}

/** A chat turn's cost row, from its TurnEnd (none without its id or its usage). */
export function endedTurnCost(
  sessionKey: string,
  end: { turnId?: string; principal?: string; usage: UsageUpdate | null },
  at: Date,
): TurnCostRecord | null {
  if (end.turnId === undefined || end.usage === null) return null;
  const turn = {
    turn_id: end.turnId,
    session_key: sessionKey,
    principal: end.principal ?? 'unknown',
    at: at.toISOString(),
  };
  return turnCostRecord(turn, end.usage);
}

/** A local turn's cost row, from its settlement: the admission is the turn, its submitter the principal. */
export function settledTurnCost(
  admissionId: string,
  sessionKey: string,
  principal: string | null,
  usage: UsageUpdate,
  at: Date,
): TurnCostRecord | null {
  const turn = {
    turn_id: admissionId,
    session_key: sessionKey,
    principal: principal ?? 'unknown',
    at: at.toISOString(),
  };
  return turnCostRecord(turn, usage);
}

/** The summary's columns after the grouping ones (the same SQL on both backends, casts aside). */
export const SUMMARY_STATUS = `CASE
    WHEN sum(CASE WHEN cost_status = 'unknown' THEN 1 ELSE 0 END) > 0 THEN 'unknown'
    WHEN sum(CASE WHEN cost_status = 'estimated' THEN 1 ELSE 0 END) > 0 THEN 'estimated'
    ELSE 'reported' END`;

export function summaryRow(row: Record<string, unknown>): CostSummaryRow {
  return {
    day: String(row['day']),
    principal: String(row['principal']),
    provider: String(row['provider']),
    model: String(row['model']),
    turns: Number(row['turns']),
    input_tokens: Number(row['input_tokens']),
    output_tokens: Number(row['output_tokens']),
    cache_read_tokens: Number(row['cache_read_tokens']),
    cache_write_tokens: Number(row['cache_write_tokens']),
    cost_usd: Number(row['cost_usd']),
    cost_status: row['cost_status'] as CostSummaryRow['cost_status'],
  };
}
