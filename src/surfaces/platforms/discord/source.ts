/**
 * Discord messages and interactions → SessionSource and the text the gateway is handed. Pure: only
 * discord-api-types' types, no client. KEY-1 as seed 002 §4 writes Discord's keys: a DM is
 * `dm:{channel}`, a guild channel `group:{channel}` (per user by default), a thread
 * `group:{parent channel}:thread_{thread}` (shared by default), the guild id in the source.
 */
import {
  ChannelType,
  type APIChannel,
  type APIGuildMember,
  type APIInteractionGuildMember,
  type APIMessage,
  type APIUser,
} from 'discord-api-types/v10';
import { SessionSource } from '../../../domain/session/source.js';

/** Discord's limit on one message's content. */
export const DISCORD_MESSAGE_LIMIT = 2000;

/** Where a message was posted, as the adapter learned it (the channel's type needs a lookup). */
export interface ChannelFacts {
  readonly id: string;
  readonly type: ChannelType;
  readonly name: string | null;
  /** A thread's parent channel. */
  readonly parent_id: string | null;
  readonly topic: string | null;
}

export function channelFactsOf(channel: APIChannel): ChannelFacts {
  return {
    id: channel.id,
    type: channel.type,
    name: 'name' in channel ? (channel.name ?? null) : null,
    parent_id: 'parent_id' in channel ? (channel.parent_id ?? null) : null,
    topic: 'topic' in channel ? (channel.topic ?? null) : null,
  };
}

export function isThread(type: ChannelType): boolean {
  return (
    type === ChannelType.PublicThread ||
    type === ChannelType.PrivateThread ||
    type === ChannelType.AnnouncementThread
  );
}

/** Who spoke, in the words sources use. */
export function nameOf(user: Pick<APIUser, 'username' | 'global_name'>): string {
  return user.global_name ?? user.username;
}

export interface SourceFacts {
  readonly messageId: string;
  readonly author: APIUser;
  /** Absent in DMs. */
  readonly guildId: string | null;
  readonly channel: ChannelFacts;
  /** The member allowed by one of its roles (allowed_role_ids): stamped as role_authorized. */
  readonly roleAuthorized: boolean;
}

export function sourceOf(facts: SourceFacts): SessionSource {
  const { channel, author } = facts;
  const thread = facts.guildId !== null && isThread(channel.type) && channel.parent_id !== null;
  return new SessionSource({
    platform: 'discord',
    chat_id: thread ? (channel.parent_id ?? channel.id) : channel.id,
    chat_name: facts.guildId === null ? null : channel.name,
    chat_type: facts.guildId === null ? 'dm' : 'group',
    chat_topic: channel.topic,
    user_id: author.id,
    user_name: nameOf(author),
    thread_id: thread ? channel.id : null,
    is_bot: author.bot === true,
    guild_id: facts.guildId,
    parent_chat_id: thread ? channel.parent_id : null,
    message_id: facts.messageId,
    role_authorized: facts.roleAuthorized,
  });
}

/** The channel a source's replies go to: the thread itself, or the chat. */
export function channelOfTarget(chatId: string, threadId: string | null): string {
  return threadId ?? chatId;
}

/**
 * The text handed in for a guild message, or null when the bot is not addressed and must be: the
 * bot's mention (`<@id>` or the legacy `<@!id>`) is taken out wherever it stands.
 */
export function textForBot(
  message: Pick<APIMessage, 'content' | 'mentions'>,
  botId: string,
  requireMention: boolean,
): string | null {
  const mention = new RegExp(`<@!?${botId}>`, 'g');
  const mentioned = mention.test(message.content) || message.mentions.some((u) => u.id === botId);
  if (requireMention && !mentioned) return null;
  return message.content.replace(mention, '').trim();
}

/** Whether one of the member's roles is on the allow-list. */
export function hasAllowedRole(
  member: Pick<APIGuildMember | APIInteractionGuildMember, 'roles'> | undefined,
  allowedRoleIds: ReadonlySet<string>,
): boolean {
  return member !== undefined && member.roles.some((role) => allowedRoleIds.has(role));
}
