/**
 * `gatehouse delegations list|stop|keep`: the background delegations of the running gateway, through
 * the same RPC methods (delegation.*) the chat and the dashboard call (docs/scheduling.md).
 */
import { DaemonError } from '../../../daemon/errors.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { openLink } from '../chat/link.js';
import { cliHome, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';
import { visible } from '../visible.js';

export interface DelegationView {
  delegation_id: string;
  parent_session_id: string;
  child_session_id: string | null;
  task: string;
  state: string;
  outcome: string | null;
  detail: string | null;
  kept: boolean;
  depth: number;
  created_at: string;
}

async function withLink<T>(
  call: (client: Awaited<ReturnType<typeof openLink>>['client']) => Promise<T>,
): Promise<T> {
  const layout = cliHome();
  loadCliConfig(layout);
  const { client } = await openLink(layout);
  try {
    return await call(client);
  } catch (error) {
    if (error instanceof RpcCallError && error.reason === 'not_found') {
      throw new DaemonError('invalid_input', `${error.message} ("gatehouse delegations list" shows the ids)`);
    }
    if (error instanceof RpcCallError && ['invalid_params', 'permission_denied'].includes(error.reason)) {
      throw new DaemonError('invalid_input', error.message);
    }
    if (error instanceof RpcCallError) throw new DaemonError('not_available', error.message);
    throw error;
  } finally {
    await client.close();
  }
}

/** One delegation as two lines: who, state and outcome; then its task. */
export function describeDelegation(d: DelegationView): string {
  const state =
    d.state === 'reported' || d.state === 'stopped'
      ? `${d.state}: ${d.outcome ?? '-'}${d.detail ? ` (${visible(d.detail)})` : ''}`
      : d.state;
  return (
    `${d.delegation_id}  ${d.parent_session_id} → ${d.child_session_id ?? '(no child yet)'}  [${state}]${d.kept ? ' kept' : ''}\n` +
    `    task: ${visible(d.task.replace(/\s+/g, ' ').slice(0, 80))}`
  );
}

export async function listDelegations(flags: { session?: string; json?: boolean }): Promise<void> {
  const { delegations } = await withLink((client) =>
    client.call<{ delegations: DelegationView[] }>(
      'delegation.list',
      flags.session === undefined ? {} : { session_id: flags.session },
    ),
  );
  if (flags.json) return say(JSON.stringify({ delegations }, null, 2));
  if (delegations.length === 0) return say('No delegations.');
  for (const d of delegations) say(describeDelegation(d));
}

export async function stopDelegation(id: string): Promise<void> {
  const { stopped } = await withLink((client) =>
    client.call<{ stopped: boolean }>('delegation.stop', { delegation_id: id }),
  );
  say(stopped ? `Stopped ${id}.` : `${id} had already ended; nothing to stop.`);
}

export async function keepDelegation(id: string): Promise<void> {
  await withLink((client) => client.call('delegation.keep', { delegation_id: id, kept: true }));
  say(`Kept ${id}: a reset of its parent session no longer stops it.`);
}
