/**
 * The real daemon with its Telegram adapter pointed at the loopback Bot API stand-in and its model
 * at the demo model running in the test process (the scaffolding is platform-fixture.ts), so a test
 * sees every Bot API call the daemon made and every request the model received.
 * `useTelegramDaemon()` registers beforeAll/afterAll for one file.
 */
import { startTelegramStandIn, type BotCall, type TelegramStandIn } from '../fixtures/telegram-standin.js';
import type { Backend } from './gateway-harness.js';
import { usePlatformDaemon, type PlatformDaemon } from './platform-fixture.js';

export const TOKEN_ENV = 'GH_E2E_TELEGRAM_TOKEN';

export type Chat = {
  id: number;
  type: 'private' | 'group' | 'supergroup';
  title?: string;
  is_forum?: boolean;
};
export type User = { id: number; first_name: string; username?: string };

export interface TelegramDaemon extends PlatformDaemon<TelegramStandIn> {
  /** sendMessage calls to `chatId` (optionally only in forum topic `threadId`), in order. */
  sentTo(chatId: number, threadId?: number | null): BotCall[];
  /** Texts of sentTo(). */
  repliesTo(chatId: number, threadId?: number | null): string[];
  /** Injects a message; resolves with the text of the next message sent to that chat (and topic). */
  ask(chat: Chat, from: User, text: string, threadId?: number): Promise<string>;
  /** Resolves with the n-th message to `chatId` whose text matches `pattern`. */
  waitForText(chatId: number, pattern: RegExp, n?: number): Promise<string>;
}

/**
 * `telegramYaml`: extra lines under `platforms.telegram:` (indented by the caller), or a function
 * giving them when the home is written (after the file's earlier beforeAll hooks ran); `yaml`:
 * top-level; `store`: the backend the daemon stores on (default sqlite; postgres gets a schema of its
 * own, dropped in afterAll).
 */
export function useTelegramDaemon(
  options: { telegramYaml?: string[] | (() => string[]); yaml?: string[]; store?: Backend } = {},
): TelegramDaemon {
  const base = usePlatformDaemon({
    platform: 'telegram',
    store: options.store,
    startStandIn: startTelegramStandIn,
    standInYaml: (standIn) => [`    token_env: ${TOKEN_ENV}`, `    api_root: ${standIn.apiRoot}`],
    tokenEnv: (standIn) => ({ [TOKEN_ENV]: standIn.token }),
    platformYaml: options.telegramYaml,
    yaml: options.yaml,
    releaseStandIn: (standIn) => standIn.releaseSends(),
  });

  const inThread = (threadId: number | null | undefined) => (c: BotCall) =>
    threadId === undefined || (c.payload.message_thread_id ?? null) === threadId;
  const sentTo = (chatId: number, threadId?: number | null) =>
    base.standIn.sent((c) => c.payload.chat_id === chatId && inThread(threadId)(c));

  return Object.assign(base, {
    sentTo,
    repliesTo(chatId: number, threadId?: number | null) {
      return sentTo(chatId, threadId).map((c) => String(c.payload.text));
    },
    async ask(chat: Chat, from: User, text: string, threadId?: number) {
      const before = sentTo(chat.id, threadId ?? null).length;
      base.standIn.inject({
        chat,
        from,
        text,
        ...(threadId === undefined ? {} : { message_thread_id: threadId }),
      });
      const call = await base.standIn.waitForCall(
        (c) => c.method === 'sendMessage' && c.payload.chat_id === chat.id && inThread(threadId ?? null)(c),
        before + 1,
      );
      return String(call.payload.text);
    },
    async waitForText(chatId: number, pattern: RegExp, n = 1) {
      const call = await base.standIn.waitForCall(
        (c) =>
          c.method === 'sendMessage' && c.payload.chat_id === chatId && pattern.test(String(c.payload.text)),
        n,
      );
      return String(call.payload.text);
    },
  });
}
