/**
 * The delegation.* methods of the RPC API (issue 28, docs/scheduling.md "Background delegations"):
 * closed param schemas, the capability each needs, and a hand-off to the delegation service.
 */
import { z } from 'zod';
import type { DelegationService } from '../../domain/delegations/service.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import type { RpcContext } from './connection.js';

const id = z.string().min(1).max(200);
const name = z.string().trim().min(1).max(200);

export const DELEGATION_METHOD_SCHEMAS = {
  'delegation.start': z.strictObject({
    session_id: id,
    request_id: id,
    task: z.string().trim().min(1).max(100_000),
    /** The child's policy: each absent field is the parent's; none may be wider than the parent's. */
    toolsets: z.array(name).max(64).optional(),
    mcp_servers: z.array(name).max(64).optional(),
    yolo: z.boolean().optional(),
    safe_mode: z.boolean().optional(),
    model: name.optional(),
    provider: name.optional(),
    max_turns: z.number().int().min(1).max(1000).optional(),
    title: name.optional(),
  }),
  'delegation.list': z.strictObject({ session_id: id.optional() }),
  'delegation.stop': z.strictObject({ delegation_id: id }),
  'delegation.keep': z.strictObject({ delegation_id: id, kept: z.boolean().default(true) }),
} as const;

export function registerDelegationMethods(
  dispatcher: Dispatcher<RpcContext>,
  delegations: DelegationService,
): void {
  const s = DELEGATION_METHOD_SCHEMAS;
  dispatcher
    .register('delegation.start', {
      params: s['delegation.start'],
      // Checked on the parent (the dispatcher's fence); creating the child needs session:create too.
      capability: 'session:submit',
      handler: (p, c) => {
        const { session_id, request_id, task, ...child } = p;
        return delegations.start(c.principal, { session_id, request_id, task, child });
      },
    })
    .register('delegation.list', {
      params: s['delegation.list'],
      capability: 'session:read',
      handler: (p, c) => delegations.list(c.principal, p.session_id ?? null),
    })
    .register('delegation.stop', {
      params: s['delegation.stop'],
      capability: 'session:control',
      handler: (p, c) => delegations.stop(c.principal, p.delegation_id),
    })
    .register('delegation.keep', {
      params: s['delegation.keep'],
      capability: 'session:control',
      handler: (p, c) => delegations.keep(c.principal, p.delegation_id, p.kept),
    });
}
