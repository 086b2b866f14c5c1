/**
 * A session's budget as `session.budget` answers it (docs/cost.md, "Budgets"), in the lines both
 * `gatehouse budget show` and the chat's `/budget` print.
 */
type Amount = { tokens: number | null; usd: number | null };
type Limit = 'session' | 'principal_daily' | 'daily';

export interface BudgetView {
  session_id: string;
  day: string;
  limits: Record<Limit, Amount>;
  spent: Record<Limit, { tokens: number; usd: number }>;
  paused: { limit: string; measure: string } | null;
  continue_once: boolean;
}

const LABELS = { session: 'this session', principal_daily: `your day`, daily: "the gateway's day" } as const;

export function budgetLines(view: BudgetView): string[] {
  const lines: string[] = [];
  for (const limit of ['session', 'principal_daily', 'daily'] as const) {
    const spent = view.spent[limit];
    const cap = view.limits[limit];
    const tokens = cap.tokens === null ? `${spent.tokens} tokens` : `${spent.tokens} of ${cap.tokens} tokens`;
    const usd = cap.usd === null ? `$${spent.usd.toFixed(4)}` : `$${spent.usd.toFixed(4)} of $${cap.usd}`;
    lines.push(`${LABELS[limit]}${limit === 'session' ? '' : ` (${view.day})`}: ${tokens}, ${usd}`);
  }
  if (view.paused) lines.push(`paused: budget_exhausted (${view.paused.limit} ${view.paused.measure})`);
  if (view.continue_once) lines.push('the next turn may run past the limits (continue once)');
  return lines;
}

/** `--tokens N` / `--usd X` as `session.budget.raise` takes them; an error message when they are not. */
export function raiseParams(
  tokens: string | undefined,
  usd: string | undefined,
): { tokens?: number; usd?: number } | string {
  const out: { tokens?: number; usd?: number } = {};
  for (const [flag, raw] of [
    ['tokens', tokens],
    ['usd', usd],
  ] as const) {
    if (raw === undefined) continue;
    const value = Number(raw);
    if (!Number.isFinite(value) || value <= 0) return `--${flag} must be a number above 0`;
    out[flag] = value;
  }
  if (out.tokens === undefined && out.usd === undefined)
    return 'name the new limit: --tokens N, --usd X, or both';
  return out;
}
