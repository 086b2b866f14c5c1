/**
 * `gatehouse approvals list|revoke`: the remembered approvals of the running gateway, through the
 * same RPC methods the dashboard's Approvals page calls (`approvals.list`, `approvals.revoke`).
 */
import { DaemonError } from '../../../daemon/errors.js';
import type { ApprovalsListResult } from '../../../protocol/results.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { openLink } from '../chat/link.js';
import { cliHome, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';
import { visible } from '../visible.js';

async function withLink<T>(
  call: (client: Awaited<ReturnType<typeof openLink>>['client']) => Promise<T>,
): Promise<T> {
  const layout = cliHome();
  loadCliConfig(layout);
  const { client } = await openLink(layout);
  try {
    return await call(client);
  } catch (error) {
    if (error instanceof RpcCallError && error.reason === 'approval_not_found') {
      throw new DaemonError('invalid_input', `${error.message} ("gatehouse approvals list" shows the ids)`);
    }
    if (error instanceof RpcCallError && error.reason === 'invalid_params') {
      throw new DaemonError('invalid_input', error.message);
    }
    if (error instanceof RpcCallError) throw new DaemonError('not_available', error.message);
    throw error;
  } finally {
    await client.close();
  }
}

export async function listApprovals(flags: { json?: boolean }): Promise<void> {
  const { approvals } = await withLink((client) => client.call<ApprovalsListResult>('approvals.list', {}));
  if (flags.json) return say(JSON.stringify({ approvals }, null, 2));
  if (approvals.length === 0) return say('No remembered approvals.');
  for (const a of approvals) {
    const scope = a.scope === 'always' ? 'always' : `session ${a.session_id ?? ''}`;
    say(`${a.id}  ${scope}  in ${visible(a.cwd)}\n    ${visible(a.shown)}`);
  }
}

export async function revokeApproval(id: string): Promise<void> {
  await withLink((client) => client.call('approvals.revoke', { id }));
  say(`Revoked ${id}: that command asks again.`);
}
