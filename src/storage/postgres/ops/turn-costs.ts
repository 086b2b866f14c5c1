/** Storage operations on turn_costs on PostgreSQL (as SQLite's ops/turn-costs.ts). */
import type { CostQuery, CostSummaryRow } from '../../../domain/ports/costs.js';
import type { Sql } from '../database.js';
import { SUMMARY_STATUS, summaryRow, TURN_COST_COLUMNS, type TurnCostRecord } from '../../rows/turn-costs.js';

export async function recordTurnCost(sql: Sql, record: TurnCostRecord): Promise<void> {
  await sql.run(
    `INSERT INTO turn_costs (${TURN_COST_COLUMNS.join(', ')})
     VALUES (${TURN_COST_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')}) ON CONFLICT (turn_id) DO NOTHING`,
    TURN_COST_COLUMNS.map((c) => record[c]),
  );
}

export async function admissionPrincipal(sql: Sql, admissionId: string): Promise<string | null> {
  const row = await sql.row<{ submitter_subject: string }>(
    'SELECT submitter_subject FROM admissions WHERE admission_id = $1',
    [admissionId],
  );
  return row?.submitter_subject ?? null;
}

export async function costSummary(sql: Sql, query: CostQuery): Promise<CostSummaryRow[]> {
  const rows = await sql.rows<Record<string, unknown>>(
    `SELECT day, principal, provider, model, count(*)::int AS turns,
       sum(input_tokens)::float8 AS input_tokens, sum(output_tokens)::float8 AS output_tokens,
       sum(cache_read_tokens)::float8 AS cache_read_tokens, sum(cache_write_tokens)::float8 AS cache_write_tokens,
       sum(cost_usd)::float8 AS cost_usd, ${SUMMARY_STATUS} AS cost_status
     FROM turn_costs
     WHERE ($1::text IS NULL OR day >= $1) AND ($2::text IS NULL OR day <= $2)
       AND ($3::text IS NULL OR principal = $3)
     GROUP BY day, principal, provider, model
     ORDER BY day, principal, provider, model`,
    [query.from_day ?? null, query.to_day ?? null, query.principal ?? null],
  );
  return rows.map(summaryRow);
}
