/**
 * `gatehouse budget show|raise|continue <session id>`: a session's budget (docs/cost.md, "Budgets"),
 * through the same RPC methods every client calls (`session.budget`, `session.budget.raise`,
 * `session.budget.continue`).
 */
import { DaemonError } from '../../../daemon/errors.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { openLink } from '../chat/link.js';
import { cliHome, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

type Amount = { tokens: number | null; usd: number | null };
interface BudgetView {
  session_id: string;
  day: string;
  limits: Record<'session' | 'principal_daily' | 'daily', Amount>;
  spent: Record<'session' | 'principal_daily' | 'daily', { tokens: number; usd: number }>;
  paused: { limit: string; measure: string } | null;
  continue_once: boolean;
}

async function budgetCall(method: string, params: Record<string, unknown>): Promise<BudgetView> {
  const layout = cliHome();
  loadCliConfig(layout);
  const { client } = await openLink(layout);
  try {
    return await client.call<BudgetView>(method, params);
  } catch (error) {
    if (error instanceof RpcCallError)
      throw new DaemonError(
        error.reason === 'invalid_params' ? 'invalid_input' : 'not_available',
        error.message,
      );
    throw error;
  } finally {
    await client.close();
  }
}

const LABELS = { session: 'this session', principal_daily: `your day`, daily: "the gateway's day" } as const;

function show(view: BudgetView): void {
  for (const limit of ['session', 'principal_daily', 'daily'] as const) {
    const spent = view.spent[limit];
    const cap = view.limits[limit];
    const tokens = cap.tokens === null ? `${spent.tokens} tokens` : `${spent.tokens} of ${cap.tokens} tokens`;
    const usd = cap.usd === null ? `$${spent.usd.toFixed(4)}` : `$${spent.usd.toFixed(4)} of $${cap.usd}`;
    say(`${LABELS[limit]}${limit === 'session' ? '' : ` (${view.day})`}: ${tokens}, ${usd}`);
  }
  if (view.paused) say(`paused: budget_exhausted (${view.paused.limit} ${view.paused.measure})`);
  if (view.continue_once) say('the next turn may run past the limits (continue once)');
}

function number(flag: string, raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0)
    throw new DaemonError('invalid_input', `${flag} must be a number above 0`);
  return value;
}

export async function budgetShow(sessionId: string, flags: { json?: boolean }): Promise<void> {
  const view = await budgetCall('session.budget', { session_id: sessionId });
  if (flags.json) return say(JSON.stringify(view, null, 2));
  show(view);
}

export async function budgetRaise(
  sessionId: string,
  flags: { tokens?: string; usd?: string },
): Promise<void> {
  const tokens = number('--tokens', flags.tokens);
  const usd = number('--usd', flags.usd);
  if (tokens === undefined && usd === undefined)
    throw new DaemonError('invalid_input', 'name the new limit: --tokens N, --usd X, or both');
  show(
    await budgetCall('session.budget.raise', {
      session_id: sessionId,
      ...(tokens === undefined ? {} : { tokens }),
      ...(usd === undefined ? {} : { usd }),
    }),
  );
}

export async function budgetContinue(sessionId: string): Promise<void> {
  await budgetCall('session.budget.continue', { session_id: sessionId });
  say(`The next turn of ${sessionId} may run past its budget, once.`);
}
