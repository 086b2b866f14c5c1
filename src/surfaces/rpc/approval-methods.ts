/**
 * Remembered approvals over RPC (issue 25): `approvals.list` and `approvals.revoke {id}`, operator
 * only. The CLI (`gatehouse approvals`) and the dashboard's Approvals page call these same methods.
 * Rules live in the prompt brokers: the local sessions' (whose `always` rules persist) and the chat
 * platforms' (memory only); a rule is listed with the surface it belongs to, and revoking an id
 * forgets it wherever it is remembered.
 */
import { z } from 'zod';
import { GatewayError } from '../../domain/errors.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import type { ApprovalsListResult } from '../../protocol/results.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { RpcContext } from './connection.js';

export const APPROVAL_METHOD_SCHEMAS = {
  'approvals.list': z.strictObject({}),
  'approvals.revoke': z.strictObject({
    id: z.string().regex(/^apr_[0-9a-f]{16}$/, 'an approval id: apr_ and 16 hex digits'),
  }),
};

export interface ApprovalBrokers {
  local: PromptBroker;
  platform: PromptBroker;
}

export function registerApprovalMethods(dispatcher: Dispatcher<RpcContext>, brokers: ApprovalBrokers): void {
  const s = APPROVAL_METHOD_SCHEMAS;
  dispatcher
    .register('approvals.list', {
      params: s['approvals.list'],
      capability: 'session:operator',
      handler: (): ApprovalsListResult => ({
        approvals: (['local', 'platform'] as const).flatMap((surface) =>
          brokers[surface].listRemembered().map(({ key: _key, ...rule }) => ({ ...rule, surface })),
        ),
      }),
    })
    .register('approvals.revoke', {
      params: s['approvals.revoke'],
      capability: 'session:operator',
      handler: (p) => {
        const local = brokers.local.revokeRemembered(p.id);
        const platform = brokers.platform.revokeRemembered(p.id);
        if (!local && !platform) {
          throw new GatewayError('approval_not_found', `No remembered approval has the id ${p.id}.`, {
            id: p.id,
          });
        }
        return { revoked: p.id };
      },
    });
}
