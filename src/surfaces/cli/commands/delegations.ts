/**
 * `gatehouse delegations list|stop|keep`: the background delegations of the running gateway, through
 * the same RPC methods (delegation.*) the chat and the dashboard call (docs/scheduling.md).
 */
import { DaemonError } from '../../../daemon/errors.js';
import type { RpcCallError } from '../../client/rpc-client.js';
import { withLink, type LinkClient } from './with-link.js';
import { say } from '../shared.js';
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

/** Refusals worded for this command: an unknown id names the list; the caller's other mistakes exit 2. */
function explain(error: RpcCallError): DaemonError | null {
  if (error.reason === 'not_found')
    return new DaemonError('invalid_input', `${error.message} ("gatehouse delegations list" shows the ids)`);
  if (['invalid_params', 'permission_denied'].includes(error.reason))
    return new DaemonError('invalid_input', error.message);
  return null;
}

const linked = <T>(call: (client: LinkClient) => Promise<T>): Promise<T> => withLink(call, explain);

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
  const { delegations } = await linked((client) =>
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
  const { stopped } = await linked((client) =>
    client.call<{ stopped: boolean }>('delegation.stop', { delegation_id: id }),
  );
  say(stopped ? `Stopped ${id}.` : `${id} had already ended; nothing to stop.`);
}

export async function keepDelegation(id: string): Promise<void> {
  await linked((client) => client.call('delegation.keep', { delegation_id: id, kept: true }));
  say(`Kept ${id}: a reset of its parent session no longer stops it.`);
}
