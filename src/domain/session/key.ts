/**
 * Session keys (SPEC KEY-1, KEY-3): the deterministic routing key of a conversation lane.
 *
 *   agent:main:{platform}:{chat_type}[:{chat_id}][:{thread_id}][:{participant}]
 *
 * Lanes (who shares one conversation), following seed 002 §4 and §5:
 * - DM: the conversation is named by chat_id; when the platform gives none (chat_id is ''), the
 *   participant (user_id_alt, else user_id) stands in for it, since a DM's chat *is* its peer. With
 *   neither, all DMs of the platform share one lane. A thread_id splits the DM further.
 * - group / channel / thread: the lane is the chat, then the thread when there is one, then the
 *   participant when isolation applies: threads isolate only with threadSessionsPerUser (default
 *   false, threads are shared), other chats with groupSessionsPerUser (default true).
 * An id field is absent when null; '' is a real (empty) value, except chat_id, which is a required
 * string and whose emptiness is the seed's "no chat_id".
 *
 * Component encoding (why: real ids contain the separator, e.g. Matrix `!abc:example.org`):
 * - '%' becomes '%25' and ':' becomes '%3A'; nothing else changes, so ids without those two
 *   characters appear verbatim and the seed's example keys are reproduced exactly.
 * - the empty string becomes '%' and an absent DM conversation followed by a thread becomes '%-'.
 *   Escaping never produces a lone '%' or '%-', so these tokens cannot be confused with any id.
 * Splitting a key on ':' therefore yields the components back, and decoding each is unambiguous.
 *
 * One coincidence is built into the seed's format and cannot be removed without changing its
 * example rows: in a group/channel, a *shared thread* T and the *per-user lane* of participant T
 * (no thread) both print as `{chat}:T`. See docs/session-model.md ("Known coincidence").
 */
import type { SessionSourceFields } from '../vocabulary.js';
import { canonicalWhatsAppIdentifier } from './whatsapp.js';
import type { WhatsAppCanonicalOptions } from './whatsapp.js';

export interface SessionKeyOptions {
  /** Isolate each participant of a group or channel (outside threads). Default true. */
  readonly groupSessionsPerUser?: boolean;
  /** Isolate each participant of a thread. Default false: a thread is one shared conversation. */
  readonly threadSessionsPerUser?: boolean;
  /** Known WhatsApp LID → phone pairs, so a LID and its number share a lane (KEY-2). */
  readonly whatsAppLidAliases?: WhatsAppCanonicalOptions['lidAliases'];
}

export const SESSION_KEY_PREFIX = 'agent:main';
const EMPTY_COMPONENT = '%';
const ABSENT_COMPONENT = '%-';

/** Escapes one key component; see the module comment for the rule and why it is injective. */
export function encodeKeyComponent(value: string): string {
  if (value === '') return EMPTY_COMPONENT;
  return value.replace(/%/g, '%25').replace(/:/g, '%3A');
}

/** Inverse of encodeKeyComponent for one component (the ABSENT token decodes to null). */
export function decodeKeyComponent(component: string): string | null {
  if (component === ABSENT_COMPONENT) return null;
  if (component === EMPTY_COMPONENT) return '';
  return component.replace(/%3A/g, ':').replace(/%25/g, '%');
}

type KeyedFields = Pick<
  SessionSourceFields,
  'platform' | 'chat_id' | 'chat_type' | 'user_id' | 'user_id_alt' | 'thread_id'
>;

/** user_id_alt (a stable id where user_id is ephemeral) before user_id; null when neither exists. */
export function participantOf(source: KeyedFields): string | null {
  return source.user_id_alt ?? source.user_id;
}

/** Seed §5: whether several users share this source's conversation. DMs are always private. */
export function isSharedMultiUserSession(
  source: Pick<SessionSourceFields, 'chat_type' | 'thread_id'>,
  options: SessionKeyOptions = {},
): boolean {
  const { groupSessionsPerUser = true, threadSessionsPerUser = false } = options;
  if (source.chat_type === 'dm') return false;
  if (source.thread_id !== null) return !threadSessionsPerUser;
  return !groupSessionsPerUser;
}

function canonicalIds(source: KeyedFields, options: SessionKeyOptions): KeyedFields {
  if (source.platform !== 'whatsapp') return source;
  const canon = (id: string | null): string | null =>
    id === null || id === ''
      ? id
      : canonicalWhatsAppIdentifier(id, { lidAliases: options.whatsAppLidAliases });
  return {
    ...source,
    chat_id: canon(source.chat_id) as string,
    user_id: canon(source.user_id),
    user_id_alt: canon(source.user_id_alt),
  };
}

/** The routing key of the lane `source` belongs to. Pure and deterministic. */
export function buildSessionKey(source: KeyedFields, options: SessionKeyOptions = {}): string {
  const ids = canonicalIds(source, options);
  const participant = participantOf(ids);
  const components: string[] = [encodeKeyComponent(ids.platform), ids.chat_type];

  if (ids.chat_type === 'dm') {
    const conversation = ids.chat_id !== '' ? ids.chat_id : participant;
    if (conversation !== null) components.push(encodeKeyComponent(conversation));
    else if (ids.thread_id !== null) components.push(ABSENT_COMPONENT);
    if (ids.thread_id !== null) components.push(encodeKeyComponent(ids.thread_id));
  } else {
    components.push(encodeKeyComponent(ids.chat_id));
    if (ids.thread_id !== null) components.push(encodeKeyComponent(ids.thread_id));
    if (!isSharedMultiUserSession(ids, options) && participant !== null) {
      components.push(encodeKeyComponent(participant));
    }
  }
  return [SESSION_KEY_PREFIX, ...components].join(':');
}
