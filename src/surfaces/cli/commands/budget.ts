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
import { budgetLines, raiseParams, type BudgetView } from '../budget-view.js';

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

function show(view: BudgetView): void {
  for (const line of budgetLines(view)) say(line);
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
  const raised = raiseParams(flags.tokens, flags.usd);
  if (typeof raised === 'string') throw new DaemonError('invalid_input', raised);
  show(await budgetCall('session.budget.raise', { session_id: sessionId, ...raised }));
}

export async function budgetContinue(sessionId: string): Promise<void> {
  await budgetCall('session.budget.continue', { session_id: sessionId });
  say(`The next turn of ${sessionId} may run past its budget, once.`);
}
