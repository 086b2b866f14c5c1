/**
 * The real daemon (`gatehouse serve` as a child process) with its Telegram adapter pointed at the
 * loopback Bot API stand-in and its model at the demo model running in the test process, so a test
 * sees every Bot API call the daemon made and every request the model received.
 *
 * `useTelegramDaemon()` registers beforeAll/afterAll for one file: one stand-in, one demo model and
 * one temp home; the test starts (and may kill and restart) the daemon itself.
 */
import fs from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { startTelegramStandIn, type BotCall, type TelegramStandIn } from '../fixtures/telegram-standin.js';
import { requireBuild, tempHome } from './cli.js';
import {
  dropTestSchema,
  startDaemon,
  storeEnv,
  writeConfig,
  type Backend,
  type RunningDaemon,
} from './gateway-harness.js';

export const TOKEN_ENV = 'GH_E2E_TELEGRAM_TOKEN';

export type Chat = {
  id: number;
  type: 'private' | 'group' | 'supergroup';
  title?: string;
  is_forum?: boolean;
};
export type User = { id: number; first_name: string; username?: string };

export interface TelegramDaemon {
  readonly standIn: TelegramStandIn;
  readonly model: DemoModelServer;
  readonly home: string;
  /** The daemon started last, or null after kill(). */
  readonly daemon: RunningDaemon | null;
  /** `env`: extra environment for this daemon only (a TZ, say). */
  start(env?: NodeJS.ProcessEnv): Promise<RunningDaemon>;
  /** Rewrites the config with these top-level lines instead of `yaml`; the next start reads it. */
  reconfigure(yaml: readonly string[]): void;
  /** The environment `gatehouse serve` needs in this home (the token; the store URL on postgres). */
  serveEnv(): NodeJS.ProcessEnv;
  /** SIGKILL: no drain, no clean-shutdown marker. */
  kill(): Promise<void>;
  /** Graceful stop (SIGTERM); resolves with the exit code. */
  stop(): Promise<number | null>;
  /** sendMessage calls to `chatId` (optionally only in forum topic `threadId`), in order. */
  sentTo(chatId: number, threadId?: number | null): BotCall[];
  /** Texts of sentTo(). */
  repliesTo(chatId: number, threadId?: number | null): string[];
  /** Injects a message; resolves with the text of the next message sent to that chat (and topic). */
  ask(chat: Chat, from: User, text: string, threadId?: number): Promise<string>;
  /** Resolves with the n-th message to `chatId` whose text matches `pattern`. */
  waitForText(chatId: number, pattern: RegExp, n?: number): Promise<string>;
  /** The messages of the last model request containing `marker`, as JSON text. */
  requestTexts(marker: string): string;
  /** The user messages of the (last) model request whose newest user message carries `marker`. */
  userMessages(marker: string): string[];
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
  let standIn: TelegramStandIn;
  let model: DemoModelServer;
  let home: string;
  let daemon: RunningDaemon | null = null;
  let topLevel: readonly string[] = options.yaml ?? [];
  const env = (extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({
    ...extra,
    [TOKEN_ENV]: standIn.token,
  });

  const configText = (yaml: readonly string[]): string =>
    [
      'model:',
      `  base_url: ${model.baseUrl}`,
      '  model: gatehouse-demo',
      ...yaml,
      'platforms:',
      '  telegram:',
      `    token_env: ${TOKEN_ENV}`,
      `    api_root: ${standIn.apiRoot}`,
      ...(typeof options.telegramYaml === 'function' ? options.telegramYaml() : (options.telegramYaml ?? [])),
      '',
    ].join('\n');

  beforeAll(async () => {
    requireBuild();
    standIn = await startTelegramStandIn();
    model = await startDemoModel();
    home = tempHome();
    writeConfig(home, configText(topLevel));
  });

  afterAll(async () => {
    model.release();
    standIn.releaseSends();
    await daemon?.stop();
    await standIn.close();
    await model.close();
    await dropTestSchema(home);
    fs.rmSync(home, { recursive: true, force: true });
  });

  const inThread = (threadId: number | null | undefined) => (c: BotCall) =>
    threadId === undefined || (c.payload.message_thread_id ?? null) === threadId;

  const fixture: TelegramDaemon = {
    get standIn() {
      return standIn;
    },
    get model() {
      return model;
    },
    get home() {
      return home;
    },
    get daemon() {
      return daemon;
    },
    async start(extra) {
      // On postgres the harness adds the store line to the config it is given.
      daemon = await startDaemon({
        home,
        env: env(extra),
        config: configText(topLevel),
        store: options.store ?? 'sqlite',
      });
      return daemon;
    },
    reconfigure(yaml) {
      topLevel = yaml;
      writeConfig(home, configText(yaml));
    },
    serveEnv() {
      return { ...storeEnv(home), [TOKEN_ENV]: standIn.token };
    },
    async kill() {
      await daemon?.kill();
      daemon = null;
    },
    async stop() {
      const code = (await daemon?.stop()) ?? null;
      daemon = null;
      return code;
    },
    sentTo(chatId, threadId) {
      return standIn.sent((c) => c.payload.chat_id === chatId && inThread(threadId)(c));
    },
    repliesTo(chatId, threadId) {
      return fixture.sentTo(chatId, threadId).map((c) => String(c.payload.text));
    },
    async ask(chat, from, text, threadId) {
      const before = fixture.sentTo(chat.id, threadId ?? null).length;
      standIn.inject({
        chat,
        from,
        text,
        ...(threadId === undefined ? {} : { message_thread_id: threadId }),
      });
      const call = await standIn.waitForCall(
        (c) => c.method === 'sendMessage' && c.payload.chat_id === chat.id && inThread(threadId ?? null)(c),
        before + 1,
      );
      return String(call.payload.text);
    },
    async waitForText(chatId, pattern, n = 1) {
      const call = await standIn.waitForCall(
        (c) =>
          c.method === 'sendMessage' && c.payload.chat_id === chatId && pattern.test(String(c.payload.text)),
        n,
      );
      return String(call.payload.text);
    },
    requestTexts(marker) {
      return JSON.stringify(lastRequestWith(model, marker));
    },
    userMessages(marker) {
      const users = (r: (typeof model.requests)[number]) =>
        (r.body?.messages ?? []).filter((m) => m.role === 'user').map((m) => String(m.content));
      const request = [...model.requests].reverse().find((r) => users(r).at(-1)?.includes(marker));
      if (request === undefined) throw new Error(`no model request answered "${marker}"`);
      return users(request);
    },
  };
  return fixture;
}

function lastRequestWith(model: DemoModelServer, marker: string) {
  const request = [...model.requests]
    .reverse()
    .find((r) => JSON.stringify(r.body?.messages ?? []).includes(marker));
  if (request === undefined) throw new Error(`no model request carried "${marker}"`);
  return request.body!.messages!;
}
