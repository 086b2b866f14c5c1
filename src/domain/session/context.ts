/**
 * Session context (SPEC CTX-1, CTX-2, KEY-3): what the agent is told about where it is talking.
 *
 * buildSessionContext gathers the facts; buildSessionContextPrompt renders the dynamic
 * `## Current Session Context` section of the system prompt. The rendering is kept stable across
 * turns on purpose: anything that changes per message (message id, and in a shared session the
 * speaker) stays out of it, so the provider's prompt cache keeps hitting. In a shared session the
 * speaker is named in the user message instead, by renderSenderPrefix.
 */
import { createHash } from 'node:crypto';
import { KNOWN_PLATFORMS } from '../vocabulary.js';
import type { Platform, SessionEntry } from '../vocabulary.js';
import { describeSource } from './source.js';
import type { IdDisplay, SessionSource } from './source.js';
import { isSharedMultiUserSession } from './key.js';
import type { SessionKeyOptions } from './key.js';

/** Where scheduled output (cron results, reminders) is delivered on one platform. */
export interface HomeChannel {
  readonly platform: Platform;
  readonly chat_id: string;
  readonly chat_name: string | null;
}

/** The part of a SessionEntry the context carries. */
export type SessionContextMetadata = Pick<
  SessionEntry,
  'session_key' | 'session_id' | 'created_at' | 'updated_at'
>;

export interface SessionContext {
  readonly source: SessionSource;
  readonly connected_platforms: readonly Platform[];
  readonly home_channels: readonly HomeChannel[];
  readonly shared_multi_user_session: boolean;
  /** Present when the context was built for a known session entry. */
  readonly session: SessionContextMetadata | null;
}

export interface SessionContextInput extends SessionKeyOptions {
  /** Platforms the gateway is connected to, in the order to show them. */
  readonly connectedPlatforms: readonly Platform[];
  readonly homeChannels?: readonly HomeChannel[];
  /** Overrides the isolation rule's answer, e.g. for a surface that knows better. */
  readonly shared?: boolean;
  readonly entry?: SessionContextMetadata | null;
}

export function buildSessionContext(source: SessionSource, input: SessionContextInput): SessionContext {
  const connected = [...new Set(input.connectedPlatforms)];
  const session = input.entry
    ? {
        session_key: input.entry.session_key,
        session_id: input.entry.session_id,
        created_at: input.entry.created_at,
        updated_at: input.entry.updated_at,
      }
    : null;
  return Object.freeze({
    source,
    connected_platforms: Object.freeze(connected),
    home_channels: Object.freeze((input.homeChannels ?? []).map((home) => Object.freeze({ ...home }))),
    shared_multi_user_session: input.shared ?? isSharedMultiUserSession(source, input),
    session,
  });
}

export interface SessionContextPromptOptions {
  /** Replace user and chat ids in the prompt text with stable hashes (CTX-2). Default false. */
  readonly redactPii?: boolean;
  /** Plugin platforms whose ids may be redacted. Core platforms need no mark; Discord never. */
  readonly piiSafePlatforms?: Iterable<string>;
}

const CORE_PLATFORMS: ReadonlySet<string> = new Set(KNOWN_PLATFORMS);

/** First 12 hex digits of SHA-256: stable across runs, so the agent can still tell people apart. */
function shortHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex').slice(0, 12);
}

export function redactUserId(id: string): string {
  return `user_${shortHash(id)}`;
}

export function redactChatId(platform: Platform, id: string): string {
  return `${platform}:${shortHash(id)}`;
}

/**
 * CTX-2 exemptions. Discord ids stay raw because the agent needs them to write `<@id>` mentions.
 * A plugin platform stays raw unless it is marked pii_safe: we cannot know whether its adapter
 * needs raw ids in the text, and silently breaking a plugin is worse than not redacting it.
 */
export function redactsIdsOf(platform: Platform, options: SessionContextPromptOptions): boolean {
  if (options.redactPii !== true || platform === 'discord') return false;
  if (CORE_PLATFORMS.has(platform)) return true;
  return new Set(options.piiSafePlatforms ?? []).has(platform);
}

function idDisplay(platform: Platform, options: SessionContextPromptOptions): IdDisplay {
  if (!redactsIdsOf(platform, options)) return { chat: (id) => id, user: (id) => id };
  return { chat: (id) => redactChatId(platform, id), user: redactUserId };
}

function nonEmpty(value: string | null): value is string {
  return value !== null && value !== '';
}

/** Renders the dynamic system-prompt section. Only this text is redacted; the context is untouched. */
export function buildSessionContextPrompt(
  context: SessionContext,
  options: SessionContextPromptOptions = {},
): string {
  const source = context.source;
  const ids = idDisplay(source.platform, options);
  const shared = context.shared_multi_user_session;
  // In a shared session the description must not depend on who is speaking.
  const described = describeSource(
    shared ? { ...source.toJSON(), user_id: null, user_name: null, user_id_alt: null } : source,
    ids,
  );

  const lines = ['## Current Session Context', '', `Source: ${described} (${source.platform})`];
  if (nonEmpty(source.chat_id)) lines.push(`Chat ID: ${ids.chat(source.chat_id)}`);
  if (nonEmpty(source.thread_id)) lines.push(`Thread ID: ${source.thread_id}`);
  if (nonEmpty(source.chat_topic)) lines.push(`Topic: ${source.chat_topic}`);
  if (!shared) {
    const userId = source.user_id_alt ?? source.user_id;
    const name = nonEmpty(source.user_name) ? source.user_name : null;
    if (name !== null || nonEmpty(userId)) {
      const idPart = nonEmpty(userId) ? `user ID: ${ids.user(userId)}` : null;
      lines.push(
        `User: ${[name, idPart === null ? null : name === null ? idPart : `(${idPart})`].filter(Boolean).join(' ')}`,
      );
    }
  }

  lines.push(
    `Connected platforms: ${context.connected_platforms.length > 0 ? context.connected_platforms.join(', ') : 'none'}`,
  );
  if (context.home_channels.length === 0) {
    lines.push('Home channels for scheduled output: none configured');
  } else {
    lines.push('Home channels for scheduled output:');
    for (const home of context.home_channels) {
      const chat = idDisplay(home.platform, options).chat(home.chat_id);
      const label = nonEmpty(home.chat_name) ? `${home.chat_name} (chat ID: ${chat})` : `chat ID: ${chat}`;
      lines.push(`- ${home.platform}: ${label}`);
    }
  }
  // The key is left out on purpose: it embeds raw ids, and routing details do not help the model.
  if (context.session !== null) {
    lines.push(`Session: ${context.session.session_id}, started ${context.session.created_at}`);
  }
  if (shared) {
    const kind = source.thread_id !== null || source.chat_type === 'thread' ? 'thread' : 'session';
    lines.push(
      '',
      `This is a shared multi-user ${kind}. Several people may take part; each user message begins ` +
        'with [sender name] so you can tell who is speaking.',
    );
  }
  return lines.join('\n');
}

/**
 * Prefixes a user message with its sender for a shared session (KEY-3). Brackets and line breaks
 * in the name are neutralised so a display name cannot forge another speaker's prefix.
 */
export function renderSenderPrefix(senderName: string, text: string): string {
  const name =
    senderName
      .replace(/[\r\n]+/g, ' ')
      .replace(/\[/g, '(')
      .replace(/\]/g, ')')
      .trim() || 'unknown';
  return `[${name}] ${text}`;
}
