/**
 * The per-session fence every method naming a session passes before its handler (issue 30), and the
 * member rules that go with it: `not_found` when the caller may not reach the session,
 * `share_level` when a member's share is too low (access-cache.ts), a member's own chat conversation
 * readable, a member's session.model kept within auth.members, and which prompt answers are for a
 * chat-platform turn rather than a local session.
 */
import { checkMemberModel, type MemberLimits } from '../auth/member-limits.js';
import { conversationOwner, type ChatMembers } from '../auth/chat-members.js';
import { isMember, type Capability, type Principal } from '../auth/principal.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import type { AccessCache } from './access-cache.js';
import { localSessionKey } from './receipt.js';
import type { ReceiptGate } from './receipt-gate.js';

export interface SessionFenceDeps {
  store: LocalSessionStore;
  sessions: SessionStore;
  accessCache: AccessCache;
  receipts: ReceiptGate;
  /** `platforms.<name>.members`: whose chat conversations a member may read; absent: none. */
  chatMembers?: ChatMembers;
  /** What members may ask for (auth.members); absent: members are refused nothing more. */
  memberLimits?: MemberLimits;
}

export class SessionFence {
  constructor(private readonly deps: SessionFenceDeps) {}

  async authorize(principal: Principal, logicalId: string, capability: Capability): Promise<void> {
    // A member may read their own chat conversation (issue 30); nothing else of it, and no other.
    if (capability === 'session:read' && isMember(principal) && (await this.ownsChat(principal, logicalId)))
      return;
    return this.deps.accessCache.authorize(principal, logicalId, capability);
  }

  /** A member's session.model stays within auth.members (a provider left out is the session's). */
  limitModel(
    principal: Principal,
    params: { session_id: string; provider?: string | undefined; model: string },
  ): void {
    const limits = this.deps.memberLimits;
    if (!limits || !isMember(principal)) return;
    const provider = params.provider ?? this.deps.receipts.get(params.session_id)?.policy.provider ?? null;
    checkMemberModel(limits, provider, params.model);
  }

  /**
   * Whether a prompt answer is for a chat-platform turn: not a local session, asked by a principal
   * not bound to named sessions (those are fenced).
   */
  async isPlatformAnswer(principal: Principal, sessionId: string): Promise<boolean> {
    return principal.sessions === undefined && (await this.deps.store.getLocalSession(sessionId)) === null;
  }

  /** Whether `id` is a chat-platform conversation of the member's own (auth/chat-members.ts). */
  private async ownsChat(principal: Principal, id: string): Promise<boolean> {
    const members = this.deps.chatMembers;
    if (members === undefined || (await this.deps.store.getLocalSession(id)) !== null) return false;
    const entry = await this.deps.sessions.lookupBySessionId(id);
    return (
      entry !== null &&
      !entry.session_key.startsWith(localSessionKey('')) &&
      conversationOwner(entry, members) === principal.subject
    );
  }
}
