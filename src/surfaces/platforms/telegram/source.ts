/** Telegram messages → SessionSource. Pure: no grammY runtime, only its types. */
import type { Message } from 'grammy/types';
import { commandAddress } from '../../../domain/messaging/commands.js';
import { SessionSource } from '../../../domain/session/source.js';
import type { ChatType } from '../../../domain/vocabulary.js';

/** Telegram's limit on one message's text. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;

export function chatTypeOf(
  message: Pick<Message, 'chat' | 'message_thread_id' | 'is_topic_message'>,
): ChatType {
  if (message.chat.type === 'private') return 'dm';
  if (message.chat.type === 'channel') return 'channel';
  // A forum topic is a thread of its group: it gets its own lane (thread_id), shared by default.
  return message.is_topic_message === true && message.message_thread_id !== undefined ? 'thread' : 'group';
}

export function sourceOfMessage(message: Message): SessionSource {
  const chatType = chatTypeOf(message);
  const from = message.from;
  const title = 'title' in message.chat ? (message.chat.title ?? null) : null;
  const userName =
    from === undefined
      ? null
      : (from.username ?? ([from.first_name, from.last_name].filter(Boolean).join(' ') || null));
  return new SessionSource({
    platform: 'telegram',
    chat_id: String(message.chat.id),
    chat_name: title,
    chat_type: chatType,
    user_id: from === undefined ? null : String(from.id),
    user_name: userName,
    thread_id: chatType === 'thread' ? String(message.message_thread_id) : null,
    is_bot: from?.is_bot ?? false,
    message_id: String(message.message_id),
  });
}

/** Telegram chat ids are integers; "+42", " 42 " and "42" name one chat. */
export function normalizeTelegramChatId(chatId: string): string {
  const trimmed = chatId.trim();
  return /^[+-]?\d+$/.test(trimmed) ? String(BigInt(trimmed)) : trimmed;
}

/**
 * What the gateway is handed for a message's text, given the bot's own username (getMe), or null
 * when the message is not for this bot at all. Telegram lets a command name its bot
 * (`/new@gatehouse_bot`); only a bare command or one naming this bot is a command:
 * - addressed to this bot: the address is dropped, and the gateway sees the bare command;
 * - addressed to another bot in a group, channel or topic: ignored (null), as Telegram itself does
 *   for bots in privacy mode — it was said to someone else, and answering it would be noise;
 * - addressed to another bot in a private chat: only this bot is there, so it is an ordinary
 *   message, passed on unchanged (the parser takes no addressed command for a command).
 */
export function textForBot(text: string, chatType: ChatType, username: string): string | null {
  const addressed = commandAddress(text);
  if (addressed === null) return text;
  if (addressed.address.toLowerCase() === username.toLowerCase()) return addressed.bare;
  return chatType === 'dm' ? text : null;
}
