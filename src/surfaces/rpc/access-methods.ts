/**
 * Sharing and the audit trail on the RPC API (issue 30, docs/identity.md): operators share a
 * session with a member and revoke it, and read who did what. The per-session fence and the audit
 * recorder are the dispatcher's hooks (accessHooks).
 */
import { z } from 'zod';
import { SHARE_LEVELS } from '../../domain/auth/shares.js';
import { GatewayError } from '../../domain/errors.js';
import type { LocalSessions } from '../../domain/local/service.js';
import type { AccessStore } from '../../domain/ports/access-store.js';
import type { Dispatcher } from '../../protocol/dispatcher.js';
import type { RpcContext } from './connection.js';

const id = z.string().min(1).max(200);
/** A member's subject as the audit and runtime.describe name it, e.g. `member:alice`. */
const member = z.string().regex(/^[a-z][a-z0-9_-]*:[^\s]{1,200}$/, {
  error: 'member must be a principal subject such as member:alice (see gatehouse audit)',
});

export const ACCESS_METHOD_SCHEMAS = {
  'session.share': z.strictObject({ session_id: id, member, level: z.enum(SHARE_LEVELS) }),
  'session.unshare': z.strictObject({ session_id: id, member }),
  'session.shares': z.strictObject({ session_id: id }),
  'audit.list': z.strictObject({
    limit: z.number().int().min(1).max(500).default(100),
    before_id: z.number().int().min(1).optional(),
    session_id: id.optional(),
    /** One principal's rows (its subject). */
    actor: z.string().min(1).max(200).optional(),
  }),
} as const;

function sharingOf(sessions: LocalSessions): NonNullable<LocalSessions['sharing']> {
  if (sessions.sharing) return sessions.sharing;
  throw new GatewayError('invalid_params', 'this gateway keeps no shares');
}

export function registerAccessMethods(
  dispatcher: Dispatcher<RpcContext>,
  sessions: LocalSessions,
  access: AccessStore,
): void {
  const s = ACCESS_METHOD_SCHEMAS;
  dispatcher
    .register('session.share', {
      params: s['session.share'],
      capability: 'session:operator',
      handler: (p, c) => sharingOf(sessions).share(c.principal, p, c.audit),
    })
    .register('session.unshare', {
      params: s['session.unshare'],
      capability: 'session:operator',
      handler: (p, c) => sharingOf(sessions).unshare(p, c.audit),
    })
    .register('session.shares', {
      params: s['session.shares'],
      capability: 'session:operator',
      handler: async (p) => ({
        session_id: p.session_id,
        shares: await sharingOf(sessions).list(p.session_id),
      }),
    })
    .register('audit.list', {
      params: s['audit.list'],
      capability: 'session:operator',
      handler: async (p) => {
        const rows = await access.listAudit({
          limit: p.limit,
          before_id: p.before_id,
          session_id: p.session_id,
          principal: p.actor,
        });
        return { rows, next_before_id: rows.length === p.limit ? (rows.at(-1)?.id ?? null) : null };
      },
    });
}
