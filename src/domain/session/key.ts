/**
 * Session keys (SPEC KEY-1, KEY-3): the deterministic routing key of a conversation lane.
 *
 *   agent:main:{platform}:{chat_type}[:{chat}][:thread_{thread_id}][:user_{participant}]
 *
 * Lanes (who shares one conversation), following seed 002 §4 and §5:
 * - DM: the conversation is named by chat_id. When the platform gives none (chat_id is ''), the
 *   participant (user_id_alt, else user_id) names it instead, written as a participant component
 *   (`user_…`), so "the DM whose chat id is X" and "the chat-less DM from user X" stay different
 *   lanes: we cannot know that a platform's chat ids and user ids live in one space. With neither,
 *   all DMs of the platform share one lane. A thread_id splits the DM further.
 * - group / channel / thread: the lane is the chat, then the thread when there is one, then the
 *   participant when isolation applies: threads isolate only with threadSessionsPerUser (default
 *   false, threads are shared), other chats with groupSessionsPerUser (default true).
 * An id field is absent when null; '' is a real (empty) value, except chat_id, which is a required
 * string and whose emptiness is the seed's "no chat_id".
 *
 * Markers: we read the seed's example tokens `thread_678` and `user_abc` as a marker plus the id
 * (thread 678, user abc). Without them a shared thread T and the per-user lane of participant T
 * would both print `{chat}:T`; with them thread and participant components can never meet.
 *
 * Id encoding (why: real ids contain the separator, e.g. Matrix `!abc:example.org`):
 * - '%' becomes '%25' and ':' becomes '%3A'; nothing else changes, so ids without those two
 *   characters appear verbatim and the seed's example keys are reproduced exactly.
 * - the empty string becomes '%', which escaping never produces for a non-empty id, so an empty
 *   id is told apart from an absent component (left out) and from every other id.
 * - in the chat position only, a chat id beginning with `thread_` or `user_` has that first '_'
 *   written '%5F', so no chat id can pass for a marker component. Ordinary ids are unaffected.
 * Splitting a key on ':' therefore yields the components back: the chat (if any) comes first and
 * never starts with a marker, the marked components follow, and decoding each is unambiguous.
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
/** Marks a thread component: `thread_678` is thread 678. */
export const THREAD_MARKER = 'thread_';
/** Marks a participant component: `user_abc` is participant abc. */
export const PARTICIPANT_MARKER = 'user_';
const EMPTY_COMPONENT = '%';

/** Escapes one id for a key component; see the module comment for the rule and why it is injective. */
export function encodeKeyComponent(value: string): string {
  if (value === '') return EMPTY_COMPONENT;
  return value.replace(/%/g, '%25').replace(/:/g, '%3A');
}

/**
 * Escapes a chat id for the chat position: like encodeKeyComponent, and a leading `thread_` or
 * `user_` gets its '_' written '%5F' so the chat cannot be read as a marked component.
 */
export function encodeChatComponent(chatId: string): string {
  const encoded = encodeKeyComponent(chatId);
  for (const marker of [THREAD_MARKER, PARTICIPANT_MARKER]) {
    if (encoded.startsWith(marker)) return `${marker.slice(0, -1)}%5F${encoded.slice(marker.length)}`;
  }
  return encoded;
}

/** Inverse of encodeKeyComponent and encodeChatComponent for one id (markers already removed). */
export function decodeKeyComponent(component: string): string {
  if (component === EMPTY_COMPONENT) return '';
  const escapes: Record<string, string> = { '%25': '%', '%3A': ':', '%5F': '_' };
  return component.replace(/%(25|3A|5F)/g, (escape) => escapes[escape] ?? escape);
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
  const thread = ids.thread_id === null ? [] : [THREAD_MARKER + encodeKeyComponent(ids.thread_id)];
  const member = participant === null ? [] : [PARTICIPANT_MARKER + encodeKeyComponent(participant)];
  const isDm = ids.chat_type === 'dm';
  // A DM is named by its chat id and never adds its participant after one; without a chat id the
  // participant names it. Elsewhere the chat is always written and the participant only when isolated.
  const chat = isDm && ids.chat_id === '' ? [] : [encodeChatComponent(ids.chat_id)];
  const named = isDm ? ids.chat_id === '' : !isSharedMultiUserSession(ids, options);
  const components = [
    encodeKeyComponent(ids.platform),
    ids.chat_type,
    ...chat,
    ...thread,
    ...(named ? member : []),
  ];
  return [SESSION_KEY_PREFIX, ...components].join(':');
}
