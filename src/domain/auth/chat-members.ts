/**
 * Chat-platform users mapped to principals (issue 30, `platforms.<name>.members`): a platform user
 * id names the principal that person is on the dashboard and the API, so one person is one identity
 * across both. A mapped user's turns spend and are summed as that principal, their approvals are
 * answered as it, their actions leave audit rows naming it, and a member's launch limits apply to
 * their chat turns. An unmapped user is `<platform>:<user id>`, as before.
 */
import { PARTICIPANT_MARKER } from '../session/key.js';
import { SessionSource } from '../session/source.js';
import type { SessionEntry } from '../vocabulary.js';

/** What a principal is, for a chat: the role decides /budget raise and the member limits. */
export interface MappedPrincipal {
  /** The principal's subject, as the dashboard and the API know it (`member:alice`, `oidc:…#…`). */
  readonly subject: string;
  readonly role: 'operator' | 'member';
}

/** A platform's mapping: platform user id → principal. */
export type PlatformMembers = ReadonlyMap<string, MappedPrincipal>;

/** The principal the sender of `source` is mapped to, or null (unmapped, or no user id). */
export function mappedPrincipal(
  source: SessionSource,
  members: PlatformMembers | undefined,
): MappedPrincipal | null {
  if (members === undefined) return null;
  for (const id of [source.user_id, source.user_id_alt]) {
    const mapped = id === null ? undefined : members.get(id);
    if (mapped !== undefined) return mapped;
  }
  return null;
}

/**
 * Who a chat's spend and actions are counted for: the mapped principal's subject, or
 * `<platform>:<user id>` (the chat id when the platform gave no user).
 */
export function chatPrincipal(source: SessionSource, mapped: MappedPrincipal | null): string {
  return mapped?.subject ?? `${source.platform}:${source.user_id ?? source.chat_id}`;
}

/** Who answered a prompt from a chat, as traces and audit name them (`subject@platform`). */
export function chatAnswerer(source: SessionSource, mapped: MappedPrincipal | null): string {
  return `${mapped?.subject ?? source.user_id ?? source.chat_id}@${source.platform}`;
}

/** Each platform's mapping, by platform name (the daemon's `platforms.<name>.members`). */
export type ChatMembers = (platform: string) => PlatformMembers | undefined;

/**
 * The principal a chat conversation belongs to, or null: a conversation of one person (a DM, or a
 * group or thread session kept per user, whose key ends with that user as its participant) whose
 * person is mapped. A shared conversation (a group or thread several people talk in) is nobody's:
 * its transcript holds what others said.
 */
export function conversationOwner(entry: SessionEntry, members: ChatMembers): string | null {
  const origin = entry.origin;
  if (origin === null) return null;
  const source = SessionSource.fromJSON(origin);
  const participant = source.user_id_alt ?? source.user_id;
  if (participant === null) return null;
  const personal =
    source.chat_type === 'dm' || entry.session_key.endsWith(`:${PARTICIPANT_MARKER}${participant}`);
  return personal ? (mappedPrincipal(source, members(source.platform))?.subject ?? null) : null;
}
