/**
 * Slack events → SessionSource and the text the gateway is handed. Pure: no client. KEY-1 as seed
 * 002 §4 writes Slack's keys: a DM (an `im` conversation) is `dm:{channel}`, a channel (public or
 * private) `channel:{channel}` (per user by default), a multi-person DM `group:{channel}`, a
 * thread `…:{channel}:thread_{thread_ts}` (shared by default). The workspace (team) id is the
 * source's guild_id.
 */
import { SessionSource } from '../../../domain/session/source.js';

/**
 * How long one posted message may be. Slack truncates `text` past 40,000 characters and advises
 * keeping a message under 4,000; longer answers are split into several messages at this size.
 */
export const SLACK_MESSAGE_LIMIT = 4000;

/** Slack's kinds of conversation, as a message event's `channel_type` names them. */
export type ConversationKind = 'im' | 'mpim' | 'channel' | 'group';

/** The fields of a `message` or `app_mention` event the adapter reads. */
export interface SlackMessageEvent {
  readonly type: string;
  readonly subtype?: string;
  readonly channel?: string;
  readonly channel_type?: string;
  readonly user?: string;
  readonly bot_id?: string;
  readonly text?: string;
  readonly ts?: string;
  readonly thread_ts?: string;
  readonly team?: string;
}

/** What the adapter learned about the conversation and the sender (names need lookups). */
export interface SourceFacts {
  readonly teamId: string | null;
  readonly channelId: string;
  readonly kind: ConversationKind;
  readonly channelName: string | null;
  readonly channelTopic: string | null;
  readonly userId: string;
  readonly userName: string | null;
  readonly isBot: boolean;
  /** The thread the message was posted in: its parent's ts; null at the top of the conversation. */
  readonly threadTs: string | null;
  readonly messageId: string;
}

export function conversationKind(channelType: string | undefined, channelId: string): ConversationKind {
  if (channelType === 'im' || channelType === 'mpim' || channelType === 'group') return channelType;
  if (channelType === 'channel') return 'channel';
  // app_mention and slash commands carry no channel_type: the id's first letter tells a DM (D).
  return channelId.startsWith('D') ? 'im' : 'channel';
}

export function sourceOf(facts: SourceFacts): SessionSource {
  const thread = facts.threadTs;
  const chatType = facts.kind === 'im' ? 'dm' : facts.kind === 'mpim' ? 'group' : 'channel';
  return new SessionSource({
    platform: 'slack',
    chat_id: facts.channelId,
    chat_name: chatType === 'dm' ? null : facts.channelName,
    chat_type: chatType,
    chat_topic: facts.channelTopic,
    user_id: facts.userId,
    user_name: facts.userName ?? facts.userId,
    thread_id: thread,
    is_bot: facts.isBot,
    guild_id: facts.teamId,
    parent_chat_id: thread === null ? null : facts.channelId,
    message_id: facts.messageId,
    role_authorized: false,
  });
}

/** A message's thread: its parent's ts when it is a reply in a thread (a parent is its own). */
export function threadOf(event: Pick<SlackMessageEvent, 'ts' | 'thread_ts'>): string | null {
  return event.thread_ts !== undefined && event.thread_ts !== event.ts ? event.thread_ts : null;
}

/**
 * The text handed in, or null when the bot is not addressed and must be. The bot's mention
 * (`<@U…>`, or `<@U…|name>` as older clients write it) is taken out wherever it stands; Slack
 * escapes `&`, `<` and `>` in text, which are put back.
 */
export function textForBot(text: string, botUserId: string, requireMention: boolean): string | null {
  const mention = new RegExp(`<@${botUserId}(?:\\|[^>]*)?>`, 'g');
  const mentioned = mention.test(text);
  if (requireMention && !mentioned) return null;
  return unescape(text.replace(mention, '')).trim();
}

function unescape(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}
