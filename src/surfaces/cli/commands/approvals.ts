/**
 * `gatehouse approvals list|revoke`: the remembered approvals of the running gateway, through the
 * same RPC methods the dashboard's Approvals page calls (`approvals.list`, `approvals.revoke`).
 */
import { DaemonError } from '../../../daemon/errors.js';
import type { ApprovalsListResult } from '../../../protocol/results.js';
import { say } from '../shared.js';
import { visible } from '../visible.js';
import { withLink, type LinkClient } from './with-link.js';

const withApprovals = <T>(call: (client: LinkClient) => Promise<T>): Promise<T> =>
  withLink(call, (error) =>
    error.reason === 'approval_not_found'
      ? new DaemonError('invalid_input', `${error.message} ("gatehouse approvals list" shows the ids)`)
      : null,
  );

export async function listApprovals(flags: { json?: boolean }): Promise<void> {
  const { approvals } = await withApprovals((client) =>
    client.call<ApprovalsListResult>('approvals.list', {}),
  );
  if (flags.json) return say(JSON.stringify({ approvals }, null, 2));
  if (approvals.length === 0) return say('No remembered approvals.');
  for (const a of approvals) {
    const scope = a.scope === 'always' ? 'always' : `session ${a.session_id ?? ''}`;
    say(`${a.id}  ${scope}  in ${visible(a.cwd)}\n    ${visible(a.shown)}`);
  }
}

export async function revokeApproval(id: string): Promise<void> {
  await withApprovals((client) => client.call('approvals.revoke', { id }));
  say(`Revoked ${id}: that command asks again.`);
}
