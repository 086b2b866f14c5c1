/**
 * SessionSource (SPEC SRC-1): the immutable record of where one message came from.
 *
 * Its JSON form is exactly SessionSourceFields (snake_case, every field always present), so
 * `SessionSource.fromJSON(source.toJSON())` is the identity and the text can be stored as is.
 * Every entry point validates: a SessionSource that exists is always well formed.
 */
import { z } from 'zod';
import { CHAT_TYPES } from '../vocabulary.js';
import type { ChatType, Platform, SessionSourceFields } from '../vocabulary.js';
import { InvalidSessionSourceError } from '../errors.js';

/** What a constructor accepts: platform and chat_id are required, everything else has a default. */
export type SessionSourceInit = Pick<SessionSourceFields, 'platform' | 'chat_id'> &
  Partial<Omit<SessionSourceFields, 'platform' | 'chat_id'>>;

const optionalText = z.string().nullable().default(null);

// Strict: an unknown key is far more likely a typo or a foreign record than data worth keeping.
const sourceSchema = z.strictObject({
  platform: z.string().min(1, 'must be a non-empty string'),
  chat_id: z.string(),
  chat_name: optionalText,
  chat_type: z.enum(CHAT_TYPES).default('dm'),
  user_id: optionalText,
  user_name: optionalText,
  thread_id: optionalText,
  chat_topic: optionalText,
  user_id_alt: optionalText,
  chat_id_alt: optionalText,
  is_bot: z.boolean().default(false),
  guild_id: optionalText,
  parent_chat_id: optionalText,
  message_id: optionalText,
  role_authorized: z.boolean().default(false),
});

/** The field order of the JSON form; also the order toJSON writes. */
const FIELD_NAMES = Object.keys(sourceSchema.shape) as (keyof SessionSourceFields)[];

const NULLABLE_FIELDS = new Set(
  FIELD_NAMES.filter((name) => sourceSchema.shape[name].safeParse(null).success),
);

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  // JSON.stringify gives undefined for functions and symbols, which only a JS caller can pass.
  const shown = JSON.stringify(value) ?? typeof value;
  return `${typeof value} ${shown.length > 40 ? `${shown.slice(0, 40)}…` : shown}`;
}

function describeIssue(
  issue: z.core.$ZodIssue,
  input: Record<string, unknown>,
): { field: string | null; message: string } {
  if (issue.code === 'unrecognized_keys') {
    return { field: issue.keys[0] ?? null, message: `unknown field(s): ${issue.keys.join(', ')}` };
  }
  const field = issue.path.length > 0 ? issue.path.map(String).join('.') : null;
  if (field === null) return { field, message: issue.message };
  const given = Object.hasOwn(input, field) ? input[field] : undefined;
  if (given === undefined) return { field, message: `${field} is required` };
  if (field === 'chat_type') {
    return { field, message: `chat_type must be one of ${CHAT_TYPES.join(', ')}, got ${kindOf(given)}` };
  }
  if (issue.code === 'invalid_type') {
    const expected = NULLABLE_FIELDS.has(field as keyof SessionSourceFields)
      ? `a ${issue.expected} or null`
      : `a ${issue.expected}`;
    return { field, message: `${field} must be ${expected}, got ${kindOf(given)}` };
  }
  return { field, message: `${field} ${issue.message}` };
}

function validate(value: unknown): SessionSourceFields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidSessionSourceError('a session source must be a JSON object', null);
  }
  const result = sourceSchema.safeParse(value);
  if (!result.success) {
    const first = result.error.issues[0];
    const { field, message } = first
      ? describeIssue(first, value as Record<string, unknown>)
      : { field: null, message: 'invalid' };
    throw new InvalidSessionSourceError(`invalid session source: ${message}`, field);
  }
  return result.data;
}

/** How ids appear in a description; the context prompt swaps in redacted forms (CTX-2). */
export interface IdDisplay {
  chat(id: string): string;
  user(id: string): string;
}

const RAW_IDS: IdDisplay = { chat: (id) => id, user: (id) => id };

function firstNonEmpty(...values: (string | null)[]): string | null {
  for (const value of values) if (value !== null && value !== '') return value;
  return null;
}

/**
 * A one-line human summary: "DM with Alice", "group: My Group, thread: 12345". Names are preferred
 * over ids; an id is shown (through `ids`) only when no name is known.
 */
export function describeSource(fields: SessionSourceFields, ids: IdDisplay = RAW_IDS): string {
  const chatLabel =
    firstNonEmpty(fields.chat_name) ?? (fields.chat_id === '' ? null : ids.chat(fields.chat_id));
  const thread = firstNonEmpty(fields.thread_id);
  let head: string;
  if (fields.chat_type === 'dm') {
    const peer =
      firstNonEmpty(fields.user_name) ??
      (firstNonEmpty(fields.user_id) === null ? chatLabel : ids.user(fields.user_id as string));
    head = peer === null ? 'DM' : `DM with ${peer}`;
  } else if (fields.chat_type === 'thread') {
    // The chat itself is the thread; name its parent only as an id since that is all we have.
    const label = chatLabel ?? thread;
    return label === null ? 'thread' : `thread: ${label}`;
  } else {
    head = chatLabel === null ? fields.chat_type : `${fields.chat_type}: ${chatLabel}`;
  }
  return thread === null ? head : `${head}, thread: ${thread}`;
}

export class SessionSource implements SessionSourceFields {
  readonly platform: Platform;
  readonly chat_id: string;
  readonly chat_name: string | null;
  readonly chat_type: ChatType;
  readonly user_id: string | null;
  readonly user_name: string | null;
  readonly thread_id: string | null;
  readonly chat_topic: string | null;
  readonly user_id_alt: string | null;
  readonly chat_id_alt: string | null;
  readonly is_bot: boolean;
  readonly guild_id: string | null;
  readonly parent_chat_id: string | null;
  readonly message_id: string | null;
  readonly role_authorized: boolean;

  /** @throws InvalidSessionSourceError when a field is missing, unknown or of the wrong kind. */
  constructor(init: SessionSourceInit) {
    const fields = validate(init);
    this.platform = fields.platform;
    this.chat_id = fields.chat_id;
    this.chat_name = fields.chat_name;
    this.chat_type = fields.chat_type;
    this.user_id = fields.user_id;
    this.user_name = fields.user_name;
    this.thread_id = fields.thread_id;
    this.chat_topic = fields.chat_topic;
    this.user_id_alt = fields.user_id_alt;
    this.chat_id_alt = fields.chat_id_alt;
    this.is_bot = fields.is_bot;
    this.guild_id = fields.guild_id;
    this.parent_chat_id = fields.parent_chat_id;
    this.message_id = fields.message_id;
    this.role_authorized = fields.role_authorized;
    Object.freeze(this);
  }

  /** Builds from a parsed JSON value (for example one field of a stored record). */
  static fromJSON(value: unknown): SessionSource {
    return value instanceof SessionSource ? value : new SessionSource(value as SessionSourceInit);
  }

  /** Builds from JSON text. @throws InvalidSessionSourceError on malformed text or a bad record. */
  static parse(text: string): SessionSource {
    let value: unknown;
    try {
      value = JSON.parse(text) as unknown;
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      throw new InvalidSessionSourceError(`session source is not valid JSON: ${detail}`, null, {
        cause: error,
      });
    }
    return SessionSource.fromJSON(value);
  }

  get description(): string {
    return describeSource(this);
  }

  /** A copy with some fields replaced, validated like a new source. */
  with(changes: Partial<SessionSourceFields>): SessionSource {
    return new SessionSource({ ...this.toJSON(), ...changes });
  }

  toJSON(): SessionSourceFields {
    const out: Record<string, unknown> = {};
    for (const name of FIELD_NAMES) out[name] = this[name];
    return out as unknown as SessionSourceFields;
  }
}
