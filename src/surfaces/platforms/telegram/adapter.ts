/**
 * The Telegram adapter, on grammY with long polling. The Bot API root is configurable (grammY's
 * `client.apiRoot`), which is also how tests point it at the loopback stand-in.
 *
 * Replies are sent as plain text (no parse_mode), split at Telegram's 4096-character limit by
 * splitMessage, which keeps code fences whole per message. A 429 answer is retried after the
 * `retry_after` Telegram asks for, a bounded number of times.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Bot, type Transformer } from 'grammy';
import {
  allowlistAuthorizer,
  type AdapterState,
  type AdapterStatus,
  type InboundSink,
  type OutboundOptions,
  type PlatformAdapter,
  type SentMessage,
  type StatusListener,
} from '../../../domain/messaging/adapter.js';
import { splitMessage } from '../../../domain/messaging/split.js';
import type { SessionSource } from '../../../domain/session/source.js';
import { normalizeTelegramChatId, sourceOfMessage, TELEGRAM_MESSAGE_LIMIT, textForBot } from './source.js';

export interface TelegramAdapterOptions {
  token: string;
  /** Default https://api.telegram.org. */
  apiRoot?: string;
  /** Only these Telegram user ids may talk to the agent. Absent: everyone who can reach the bot. */
  allowedUserIds?: readonly string[];
  /** Long-poll timeout in seconds (getUpdates `timeout`). Default 30. */
  pollTimeoutSeconds?: number;
  /** How many 429 answers in a row one call waits out before failing. Default 5. */
  maxRateLimitRetries?: number;
  /** The longest retry_after honoured, in seconds; longer fails the call. Default 60. */
  maxRetryAfterSeconds?: number;
}

export class TelegramAdapter implements PlatformAdapter {
  readonly platform = 'telegram';
  readonly piiSafe = true;
  private readonly bot: Bot;
  private readonly allowed: (source: SessionSource) => boolean;
  private state: AdapterState = 'stopped';
  private detail: string | null = null;
  private account: string | null = null;
  private polling: Promise<void> | null = null;
  private onStatus: StatusListener | null = null;
  /** Updates handed to the gateway and not yet taken by it: the next getUpdates waits for them. */
  private readonly untaken = new Set<Promise<void>>();

  constructor(private readonly options: TelegramAdapterOptions) {
    this.bot = new Bot(options.token, {
      client: { ...(options.apiRoot === undefined ? {} : { apiRoot: options.apiRoot.replace(/\/+$/, '') }) },
    });
    this.bot.api.config.use(
      retryRateLimits(options.maxRateLimitRetries ?? 5, options.maxRetryAfterSeconds ?? 60),
    );
    this.bot.api.config.use(async (prev, method, payload, signal) => {
      if (method === 'getUpdates') while (this.untaken.size > 0) await Promise.all([...this.untaken]);
      return prev(method, payload, signal);
    });
    this.allowed = allowlistAuthorizer(options.allowedUserIds);
  }

  async start(sink: InboundSink, onStatus?: StatusListener): Promise<void> {
    if (this.state === 'running' || this.state === 'starting') return;
    this.onStatus = onStatus ?? null;
    this.detail = null;
    this.become('starting');
    // An update is confirmed to Telegram by the next getUpdates call (its offset). The handler hands
    // each update to the gateway without waiting, so a batch is taken concurrently (its durable
    // writes share group commits), and the getUpdates transformer below waits until every update
    // handed in so far was taken: nothing is confirmed before the gateway has it on disk, and a
    // crash before that gets it again.
    this.bot.on('message:text', (ctx) => {
      const source = sourceOfMessage(ctx.message);
      // getMe ran before polling began, so the bot's own username is known for every update. A
      // message for another bot is not handed in: the next getUpdates confirms it like any other.
      const text = textForBot(ctx.message.text, source.chat_type, ctx.me.username);
      if (text === null) return;
      const taken = sink({
        source,
        text,
        internal: false,
        received_at: new Date().toISOString(),
      });
      this.untaken.add(taken);
      void taken.finally(() => this.untaken.delete(taken));
    });
    // One bad update must not stop polling; the gateway never throws from the sink anyway.
    this.bot.catch(() => undefined);
    await new Promise<void>((resolve, reject) => {
      this.polling = this.bot
        .start({
          allowed_updates: ['message'],
          timeout: this.options.pollTimeoutSeconds ?? 30,
          onStart: (me) => {
            this.account = `@${me.username}`;
            this.become('running');
            resolve();
          },
        })
        .catch((error: unknown) => {
          // Also reached when polling dies after start (a revoked token, a second poller): the
          // status then says why, though start() resolved long ago.
          // The reason is shown by `gatehouse status` and kept in gateway.json: never the token.
          this.detail = oneLine(error).split(this.options.token).join('***');
          this.become('failed');
          reject(new Error(`telegram: cannot start polling: ${this.detail}`));
        });
    });
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    if (this.bot.isRunning()) await this.bot.stop();
    await this.polling;
    this.polling = null;
    this.become('stopped');
  }

  private become(state: AdapterState): void {
    if (this.state === state) return;
    this.state = state;
    this.onStatus?.(this.status());
  }

  async send(chatId: string, text: string, options: OutboundOptions): Promise<SentMessage[]> {
    const sent: SentMessage[] = [];
    const pieces = splitMessage(text === '' ? '(empty reply)' : text, TELEGRAM_MESSAGE_LIMIT);
    for (const [index, piece] of pieces.entries()) {
      const message = await this.bot.api.sendMessage(chatIdOf(chatId), piece, {
        ...(options.thread_id === null ? {} : { message_thread_id: Number(options.thread_id) }),
        // Only the first piece quotes the question; quoting a vanished message must not fail a send.
        ...(index === 0 && options.reply_to !== null
          ? { reply_parameters: { message_id: Number(options.reply_to), allow_sending_without_reply: true } }
          : {}),
      });
      sent.push({ message_id: String(message.message_id) });
    }
    return sent;
  }

  async edit(chatId: string, messageId: string, text: string): Promise<void> {
    await this.bot.api.editMessageText(
      chatIdOf(chatId),
      Number(messageId),
      text.slice(0, TELEGRAM_MESSAGE_LIMIT),
    );
  }

  async sendTyping(chatId: string, threadId: string | null): Promise<void> {
    await this.bot.api.sendChatAction(chatIdOf(chatId), 'typing', {
      ...(threadId === null ? {} : { message_thread_id: Number(threadId) }),
    });
  }

  normalizeChatId(chatId: string): string {
    return normalizeTelegramChatId(chatId);
  }

  authorize(source: SessionSource): boolean {
    return this.allowed(source);
  }

  status(): AdapterStatus {
    return {
      platform: this.platform,
      state: this.state,
      detail: this.detail,
      account: this.account,
      mode: 'polling',
    };
  }
}

function chatIdOf(chatId: string): number | string {
  const normal = normalizeTelegramChatId(chatId);
  return /^-?\d+$/.test(normal) ? Number(normal) : normal;
}

/** Waits out 429 Too Many Requests answers, as long as Telegram asks (bounded). */
function retryRateLimits(maxRetries: number, maxRetryAfterSeconds: number): Transformer {
  return async (prev, method, payload, signal) => {
    for (let attempt = 0; ; attempt++) {
      const result = await prev(method, payload, signal);
      if (result.ok || result.error_code !== 429 || method === 'getUpdates' || attempt >= maxRetries) {
        return result;
      }
      const wait = result.parameters?.retry_after ?? 1;
      if (wait > maxRetryAfterSeconds) return result;
      await sleep(wait * 1000);
    }
  };
}

function oneLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
}
