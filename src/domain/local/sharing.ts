/**
 * Operators share a local session with a member and revoke it (issue 30, docs/identity.md). The
 * share is stored (AccessStore); the access fence reads it on every call, on every instance, so a
 * grant or a change of level holds at the member's next call. A revocation also detaches the
 * member's viewers from the session at once (they are told `session.access_revoked`), so no further
 * event reaches them: here at once, and on every other instance of a cluster by the session's
 * `share.revoked` event, which each hub applies before it shows anything after it (hub.ts).
 */
import type { Principal } from '../auth/principal.js';
import type { SessionShare, ShareLevel } from '../auth/shares.js';
import { GatewayError } from '../errors.js';
import { auditRowFor, type AccessStore, type AuditDraft } from '../ports/access-store.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import {
  ACCESS_REVOKED_NOTIFICATION,
  revokedViewer,
  SHARE_REVOKED_EVENT,
  type PublicEvent,
  type Viewer,
} from './hub.js';

export { ACCESS_REVOKED_NOTIFICATION };

export interface SharingContext {
  store: LocalSessionStore;
  access: AccessStore;
  profile: string;
  /** Detaches the viewers `gone` picks from the session, in this process; returns them. */
  detachWhere(logicalId: string, gone: (viewer: Viewer) => boolean): Viewer[];
  /** Publishes a session event to its viewers (on every instance of a cluster). */
  publish(logicalId: string, event: PublicEvent): void;
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
    /** The call's audit row, committed with the share (issue 30). */
    audit?: AuditDraft,
  ): Promise<SessionShare> {
    await this.session(params.session_id);
    const share: SessionShare = {
      logical_id: params.session_id,
      member: params.member,
      level: params.level,
      granted_by: principal.subject,
      granted_at: this.ctx.now().toISOString(),
    };
    await this.ctx.access.share(share, auditRowFor(audit, params.session_id));
    if (audit) audit.recorded = true;
    return share;
  }

  async unshare(
    params: { session_id: string; member: string },
    /** The call's audit row, committed with the revocation (issue 30). */
    audit?: AuditDraft,
  ): Promise<{ session_id: string; member: string; revoked: boolean; viewers_detached: number }> {
    await this.session(params.session_id);
    const revoked = await this.ctx.access.unshare(
      params.session_id,
      params.member,
      auditRowFor(audit, params.session_id),
    );
    if (audit) audit.recorded = true;
    // An operator of the same subject keeps its own access; only the member's viewers leave.
    const detached = this.ctx.detachWhere(params.session_id, revokedViewer(params.member));
    for (const viewer of detached)
      viewer.notify(ACCESS_REVOKED_NOTIFICATION, { session_id: params.session_id });
    // The member's viewers on the other instances of a cluster leave when this event reaches them.
    if (revoked) this.ctx.publish(params.session_id, { type: SHARE_REVOKED_EVENT, member: params.member });
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
