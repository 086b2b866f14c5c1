/**
 * The backend-neutral rules of the store contracts (SessionStore, DeliveryLedger): input checks and
 * small decisions every backend applies the same way before and around its SQL.
 */
import { InvalidParamsError } from '../errors.js';
import {
  CHAT_TYPES,
  type SessionEntry,
  type SessionSourceFields,
  type TranscriptMessage,
} from '../vocabulary.js';

/** ENT-2 input: a non-empty key and a known chat type; refused before anything is written. */
export function checkAccessInput(sessionKey: string, source: SessionSourceFields): void {
  if (typeof sessionKey !== 'string' || sessionKey === '')
    throw new InvalidParamsError('session key is empty');
  if (!(CHAT_TYPES as readonly string[]).includes(source.chat_type)) {
    throw new InvalidParamsError(`unknown chat_type ${JSON.stringify(source.chat_type)}`);
  }
}

/** What a reset or a switch clears on the entry. */
export const CLEAR_FLAGS = {
  was_auto_reset: false,
  auto_reset_reason: null,
  reset_had_activity: false,
  is_fresh_reset: false,
  suspended: false,
  resume_pending: false,
  resume_reason: null,
} as const;

/**
 * A turn marker still belongs to the conversation on its key: the entry exists and points at the
 * marker's session. After a reset, a switch or a prune it does not, and the interrupted turn is
 * dropped instead of resumed into another conversation.
 */
export function markerIsCurrent(
  entry: SessionEntry | null,
  marker: { session_id: string },
): entry is SessionEntry {
  return entry !== null && entry.session_id === marker.session_id;
}

/** The most hits one `searchMessages` call returns (both backends). */
export const SEARCH_LIMIT_MAX = 500;

/** A page size of 1..`max`, or invalid_params. */
export function checkLimit(limit: number, max: number): void {
  if (!Number.isInteger(limit) || limit < 1 || limit > max) {
    throw new InvalidParamsError(`limit must be an integer from 1 to ${max}, got ${String(limit)}`);
  }
}

const MESSAGE_ROLES = new Set(['system', 'user', 'assistant', 'tool']);

/** Messages to store: known roles, string or null content; the input as a list. */
export function validateMessages(
  input: TranscriptMessage | readonly TranscriptMessage[],
): readonly TranscriptMessage[] {
  const list: readonly TranscriptMessage[] = Array.isArray(input)
    ? (input as readonly TranscriptMessage[])
    : [input as TranscriptMessage];
  for (const m of list) {
    if (!MESSAGE_ROLES.has(m.role))
      throw new InvalidParamsError(`unknown message role ${JSON.stringify(m.role)}`);
    if (m.content !== null && typeof m.content !== 'string') {
      throw new InvalidParamsError('message content must be a string or null');
    }
  }
  return list;
}
