/** Storage operations on turn_costs (docs/cost.md). Each takes the database handle and holds its SQL. */
import type Database from 'better-sqlite3';
import type { CostQuery, CostSummaryRow } from '../../../domain/ports/costs.js';
import { statement } from '../statements.js';
import { SUMMARY_STATUS, summaryRow, TURN_COST_COLUMNS, type TurnCostRecord } from '../../rows/turn-costs.js';

type Db = Database.Database;

/** Records a turn's cost; a turn already recorded (its settlement is written once) keeps its row. */
export function recordTurnCost(db: Db, record: TurnCostRecord): void {
  statement(
    db,
    `INSERT INTO turn_costs (${TURN_COST_COLUMNS.join(', ')})
     VALUES (${TURN_COST_COLUMNS.map((c) => `@${c}`).join(', ')}) ON CONFLICT (turn_id) DO NOTHING`,
  ).run(record);
}

/** Who submitted a local admission (its submitter's subject), for its cost row. */
export function admissionPrincipal(db: Db, admissionId: string): string | null {
  const row = statement(db, 'SELECT submitter_subject FROM admissions WHERE admission_id = ?').get(
    admissionId,
  ) as { submitter_subject: string } | undefined;
  return row?.submitter_subject ?? null;
}

export function costSummary(db: Db, query: CostQuery): CostSummaryRow[] {
  const rows = statement(
    db,
    `SELECT day, principal, provider, model, count(*) AS turns,
       sum(input_tokens) AS input_tokens, sum(output_tokens) AS output_tokens,
       sum(cache_read_tokens) AS cache_read_tokens, sum(cache_write_tokens) AS cache_write_tokens,
       sum(cost_usd) AS cost_usd, ${SUMMARY_STATUS} AS cost_status
     FROM turn_costs
     WHERE (@from_day IS NULL OR day >= @from_day) AND (@to_day IS NULL OR day <= @to_day)
       AND (@principal IS NULL OR principal = @principal)
     GROUP BY day, principal, provider, model
     ORDER BY day, principal, provider, model`,
  ).all({
    from_day: query.from_day ?? null,
    to_day: query.to_day ?? null,
    principal: query.principal ?? null,
  }) as Record<string, unknown>[];
  return rows.map(summaryRow);
}
