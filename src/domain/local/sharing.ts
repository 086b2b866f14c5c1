/**
 * Operators share a local session with a member and revoke it (issue 30, docs/identity.md). The
 * share is stored (AccessStore); the access fence reads it on every call, so a grant or a change of
 * level holds at the member's next call. A revocation also detaches the member's viewers from the
 * session at once (they are told `session.access_revoked`), so no further event reaches them.
 */
import { isOperator, type Principal } from '../auth/principal.js';
import type { SessionShare, ShareLevel } from '../auth/shares.js';
import { GatewayError } from '../errors.js';
import type { AccessStore } from '../ports/access-store.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { Viewer } from './hub.js';

export const ACCESS_REVOKED_NOTIFICATION = 'session.access_revoked';

export interface SharingContext {
  store: LocalSessionStore;
  access: AccessStore;
  profile: string;
  /** Detaches the viewers `gone` picks from the session, in this process; returns them. */
  detachWhere(logicalId: string, gone: (viewer: Viewer) => boolean): Viewer[];
  now(): Date;
}

export class SessionSharing {
  constructor(private readonly ctx: SharingContext) {}

  private async session(logicalId: string): Promise<void> {
    const row = await this.ctx.store.getLocalSession(logicalId);
    if (!row || row.profile !== this.ctx.profile)
      throw new GatewayError('not_found', `no session ${logicalId}`, { session_id: logicalId });
  }

  async share(
    principal: Principal,
    params: { session_id: string; member: string; level: ShareLevel },
  ): Promise<SessionShare> {
    await this.session(params.session_id);
    const share: SessionShare = {
      logical_id: params.session_id,
      member: params.member,
      level: params.level,
      granted_by: principal.subject,
      granted_at: this.ctx.now().toISOString(),
    };
    await this.ctx.access.share(share);
    return share;
  }

  async unshare(params: {
    session_id: string;
    member: string;
  }): Promise<{ session_id: string; member: string; revoked: boolean; viewers_detached: number }> {
    await this.session(params.session_id);
    const revoked = await this.ctx.access.unshare(params.session_id, params.member);
    // An operator of the same subject keeps its own access; only the member's viewers leave.
    const detached = this.ctx.detachWhere(
      params.session_id,
      (viewer) => viewer.principal.subject === params.member && !isOperator(viewer.principal),
    );
    for (const viewer of detached)
      viewer.notify(ACCESS_REVOKED_NOTIFICATION, { session_id: params.session_id });
    return {
      session_id: params.session_id,
      member: params.member,
      revoked,
      viewers_detached: detached.length,
    };
  }

  async list(logicalId: string): Promise<SessionShare[]> {
    await this.session(logicalId);
    return this.ctx.access.sharesOn(logicalId);
  }
}
