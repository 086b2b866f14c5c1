/**
 * The Telegram adapter, on grammY, with long polling or (configured explicitly) a webhook. The Bot
 * API root is configurable (grammY's `client.apiRoot`), which is also how tests point it at the
 * loopback stand-in.
 *
 * Replies are sent as plain text (no parse_mode), split at Telegram's 4096-character limit by
 * splitMessage, which keeps code fences whole per message. A 429 answer is retried after the
 * `retry_after` Telegram asks for, a bounded number of times.
 */
import { botIdOf } from '../../../domain/cluster/bots.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { Bot, GrammyError, type Context, type Transformer } from 'grammy';
import type { InlineKeyboardMarkup } from 'grammy/types';
import {
  allowlistAuthorizer,
  type AdapterState,
  type ApprovalControls,
  NotConfirmable,
  type AdapterStatus,
  type InboundSink,
  type MessageEvent,
  type OutboundOptions,
  type PlatformAdapter,
  type SentMessage,
  type StatusListener,
} from '../../../domain/messaging/adapter.js';
import { splitMessage } from '../../../domain/messaging/split.js';
import type { SessionSource } from '../../../domain/session/source.js';
import { approvalKeyboard, parseCallbackData } from './approvals.js';
import { buttonApprovals } from '../native-controls.js';
import {
  attachmentOf,
  AttachmentTooLarge,
  describeStored,
  describeUnfetched,
  fetchToFile,
  storedName,
  tooLargeReply,
  type TelegramAttachment,
} from './attachments.js';
import { normalizeTelegramChatId, sourceOfMessage, TELEGRAM_MESSAGE_LIMIT, textForBot } from './source.js';
import { listenForWebhook, type WebhookListener } from './webhook.js';

/** Webhook mode: Telegram posts to `url`; the proxy in front forwards to `host:port`. */
export interface TelegramWebhookOptions {
  url: string;
  secretToken: string;
  host: string;
  port: number;
}

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
  /** Present: webhook mode instead of long polling. */
  webhook?: TelegramWebhookOptions;
  /** Where photos, documents and voice notes are stored. Absent: they are refused with a reply. */
  attachmentsDir?: string;
  /** The largest attachment accepted, in bytes. Default 20 MB (the Bot API's download limit). */
  maxAttachmentBytes?: number;
}

export class TelegramAdapter implements PlatformAdapter {
  readonly platform = 'telegram';
  /** The bot's non-secret id (its lease's name in a cluster), never the token. */
  readonly botId: string;
  readonly piiSafe = true;
  private readonly bot: Bot;
  private readonly allowed: (source: SessionSource) => boolean;
  private state: AdapterState = 'stopped';
  private detail: string | null = null;
  private account: string | null = null;
  private polling: Promise<void> | null = null;
  private listener: WebhookListener | null = null;
  private onStatus: StatusListener | null = null;
  /** Updates handed to the gateway and not yet taken by it: the next getUpdates waits for them. */
  private readonly untaken = new Set<Promise<void>>();
  /** The update handlers are registered (the first start): a later start reuses them. */
  private handling = false;
  /** Set when the sink rejected with NotConfirmable: no getUpdates (its offset confirms) from then on. */
  private unconfirmable = false;
  /** Per chat, the hand-in of its latest update: the next one of that chat waits for it. */
  private readonly chatTails = new Map<number, Promise<void>>();
  /** Approvals as inline keyboards; a click comes back as an /approve or /deny bound to its prompt. */
  readonly approvals: ApprovalControls = buttonApprovals<InlineKeyboardMarkup>({
    limit: TELEGRAM_MESSAGE_LIMIT,
    open: approvalKeyboard,
    // An empty keyboard removes the buttons with the same edit that shows the outcome.
    closed: () => ({ inline_keyboard: [] }),
    post: async (chatId, threadId, text, keyboard) => {
      const message = await this.bot.api.sendMessage(chatIdOf(chatId), text, {
        ...(threadId === null ? {} : { message_thread_id: Number(threadId) }),
        ...(keyboard === null ? {} : { reply_markup: keyboard }),
      });
      return String(message.message_id);
    },
    edit: async (chatId, _threadId, messageId, text, keyboard) => {
      await this.bot.api.editMessageText(chatIdOf(chatId), Number(messageId), text, {
        reply_markup: keyboard,
      });
    },
  });

  constructor(private readonly options: TelegramAdapterOptions) {
    this.botId = botIdOf('telegram', options.token);
    this.bot = new Bot(options.token, {
      client: { ...(options.apiRoot === undefined ? {} : { apiRoot: options.apiRoot.replace(/\/+$/, '') }) },
    });
    this.bot.api.config.use(
      retryRateLimits(options.maxRateLimitRetries ?? 5, options.maxRetryAfterSeconds ?? 60),
    );
    this.bot.api.config.use(async (prev, method, payload, signal) => {
      if (method === 'getUpdates') {
        while (this.untaken.size > 0) await Promise.all([...this.untaken]);
        // Its offset would confirm an update the gateway may not have taken: Telegram keeps it.
        if (this.unconfirmable) throw new NotConfirmable();
      }
      if (this.state !== 'starting') return prev(method, payload, signal);
      // Starting: grammY tries getMe again by itself while the API cannot be reached (a refusal, a
      // 5xx, a reset connection), so the start just waits; the status says why meanwhile.
      try {
        const result = await prev(method, payload, signal);
        if (!result.ok) this.unreachable(`${result.error_code}: ${result.description}`);
        return result;
      } catch (error) {
        this.unreachable(oneLine(error));
        throw error;
      }
    });
    this.allowed = allowlistAuthorizer(options.allowedUserIds);
  }

  async start(sink: InboundSink, onStatus?: StatusListener): Promise<void> {
    if (this.state === 'running' || this.state === 'starting') return;
    this.onStatus = onStatus ?? null;
    this.detail = null;
    this.become('starting');
    // Polling: an update is confirmed to Telegram by the next getUpdates call (its offset). The
    // handler hands each update to the gateway without waiting, so a batch is taken concurrently
    // (its durable writes share group commits), and the getUpdates transformer waits until every
    // update handed in so far was taken: nothing is confirmed before the gateway has it on disk,
    // and a crash before that gets it again.
    // Webhook: the handler returns once the update was taken, and only then is Telegram answered.
    const take = (work: Promise<void>): Promise<void> | undefined => {
      if (this.options.webhook !== undefined) return work;
      // A failed reply to an attachment over the limit must not stop polling; NotConfirmable (the
      // sink's one rejection) stops every later confirmation.
      const settled = work.catch((error: unknown) => {
        if (error instanceof NotConfirmable) this.unconfirmable = true;
      });
      this.untaken.add(settled);
      void settled.finally(() => this.untaken.delete(settled));
      return undefined;
    };
    // Once: a start that failed is tried again (the gateway retries while the API is unreachable).
    if (!this.handling) this.handle(sink, take);
    this.handling = true;
    try {
      if (this.options.webhook === undefined) await this.startPolling();
      else await this.startWebhook(this.options.webhook);
    } catch (error) {
      // The reason is shown by `gatehouse status` and kept in gateway.json: never a secret.
      this.detail = this.scrub(oneLine(error));
      this.become('failed');
      // No `cause`: the original error may carry the token or the secret, and causes get logged.
      // eslint-disable-next-line preserve-caught-error
      throw new Error(`telegram: cannot start ${this.mode()}: ${this.detail}`);
    }
  }

  /** Hands every kind of update the bot receives to the gateway's sink. */
  private handle(sink: InboundSink, take: (work: Promise<void>) => Promise<void> | undefined): void {
    this.bot.on('message:text', (ctx) => {
      const source = sourceOfMessage(ctx.message);
      // getMe ran before updates began, so the bot's own username is known for every update. A
      // message for another bot is not handed in: it is confirmed like any other.
      const text = textForBot(ctx.message.text, source.chat_type, ctx.me.username);
      if (text === null) return;
      const received_at = new Date().toISOString();
      return take(
        this.inChatOrder(ctx.message.chat.id, () => sink({ source, text, internal: false, received_at })),
      );
    });
    this.bot.on('callback_query:data', (ctx) => this.takeClick(ctx, sink, take));
    this.bot.on(['message:photo', 'message:document', 'message:voice'], (ctx) =>
      take(this.takeAttachment(ctx, sink)),
    );
  }

  /** While starting: why the last call to the API failed, for `gatehouse status`. */
  private unreachable(why: string): void {
    if (this.state !== 'starting') return;
    this.detail = this.scrub(why);
    this.onStatus?.(this.status());
  }

  private mode(): 'polling' | 'webhook' {
    return this.options.webhook === undefined ? 'polling' : 'webhook';
  }

  private scrub(text: string): string {
    let out = text.split(this.options.token).join('***');
    if (this.options.webhook !== undefined) out = out.split(this.options.webhook.secretToken).join('***');
    return out;
  }

  private async startPolling(): Promise<void> {
    // One bad update must not stop polling; the gateway never throws from the sink anyway.
    this.bot.catch(() => undefined);
    await new Promise<void>((resolve, reject) => {
      this.polling = this.bot
        .start({
          allowed_updates: ['message', 'callback_query'],
          timeout: this.options.pollTimeoutSeconds ?? 30,
          onStart: (me) => {
            // Stopped while getMe was still unanswered: it does not start polling after all.
            if (this.state === 'stopped') return void this.bot.stop().catch(() => undefined);
            this.account = `@${me.username}`;
            this.become('running');
            resolve();
          },
        })
        .catch((error: unknown) => {
          // Also reached when polling dies after start (a revoked token, a second poller): the
          // status then says why, though start() resolved long ago.
          this.detail = this.scrub(oneLine(error));
          this.become('failed');
          reject(error instanceof Error ? error : new Error(String(error)));
        });
    });
  }

  private async startWebhook(webhook: TelegramWebhookOptions): Promise<void> {
    // A handler error rejects handleUpdate (bot.catch serves polling only), and the listener
    // answers 500: Telegram delivers the update again.
    await this.bot.init();
    this.account = `@${this.bot.botInfo.username}`;
    this.listener = await listenForWebhook(this.bot, {
      host: webhook.host,
      port: webhook.port,
      path: new URL(webhook.url).pathname,
      secretToken: webhook.secretToken,
    });
    try {
      // Updates Telegram holds from while the gateway was down are kept (drop_pending_updates off).
      await this.bot.api.setWebhook(webhook.url, {
        secret_token: webhook.secretToken,
        allowed_updates: ['message', 'callback_query'],
      });
    } catch (error) {
      await this.listener.close();
      this.listener = null;
      throw error;
    }
    this.become('running');
  }

  /** The webhook listener's port (webhook mode, once started), for tests and status. */
  webhookPort(): number | null {
    return this.listener?.port ?? null;
  }

  /**
   * A click on an approval button. Answered with answerCallbackQuery (Telegram shows a spinner
   * until then): at once with an alert for a sender the allow-list does not admit (nothing reaches
   * the gateway), otherwise once the gateway took the /approve or /deny made of it. The event's
   * message id is the callback query's (prefixed, so it never equals a message's): a redelivered
   * click is dropped by the inbound ledger, and the prompt binding refuses an answered prompt.
   */
  private takeClick(
    ctx: Context,
    sink: InboundSink,
    take: (work: Promise<void>) => Promise<void> | undefined,
  ): Promise<void> | undefined {
    const query = ctx.callbackQuery!;
    const answer = (text?: string) =>
      ctx
        .answerCallbackQuery(text === undefined ? undefined : { text, show_alert: true })
        .then(() => undefined)
        .catch(() => undefined);
    const click = parseCallbackData(query.data ?? '');
    // A message older than 48 hours comes as inaccessible (date 0): its chat is still known.
    const message = query.message;
    if (click === null || message === undefined) return answer('That approval is no longer open.');
    const source = sourceOfMessage({ ...message, from: query.from }).with({ message_id: `cb${query.id}` });
    if (!this.authorize(source)) return answer('You are not allowed to do this here.');
    const event: MessageEvent = {
      source,
      text: click.text,
      internal: false,
      received_at: new Date().toISOString(),
      prompt: click.prompt,
    };
    return take(sink(event).then(() => answer()));
  }

  /**
   * A photo, document or voice note: stored, then handed in with a line that tells the model what
   * it is and where it lies, followed by the caption. Over the limit: the sender is told and nothing
   * is handed in. A fetch that fails still hands the message in, saying so: nothing is dropped.
   */
  private async takeAttachment(ctx: Context, sink: InboundSink): Promise<void> {
    const message = ctx.message!;
    const source = sourceOfMessage(message);
    const caption =
      message.caption === undefined ? '' : textForBot(message.caption, source.chat_type, ctx.me.username);
    if (caption === null) return;
    const maxBytes = this.options.maxAttachmentBytes ?? 20 * 1024 * 1024;
    const attachment = attachmentOf(message, maxBytes)!;
    // The download starts now; the hand-in keeps its place among the chat's updates.
    const storing = this.store(attachment, maxBytes);
    return this.inChatOrder(message.chat.id, () =>
      this.handInAttachment(message, source, caption, storing, sink),
    );
  }

  /**
   * Runs `handIn` once every earlier update of the same chat was handed in. A batch of updates is
   * taken concurrently, and an attachment waits for its download: without this a text sent after a
   * photo would reach the session first. The place is taken when the update arrives, in order.
   */
  private inChatOrder(chatId: number, handIn: () => Promise<void>): Promise<void> {
    const mine = (this.chatTails.get(chatId) ?? Promise.resolve()).then(handIn);
    const tail = mine.catch(() => undefined);
    this.chatTails.set(chatId, tail);
    void tail.finally(() => {
      if (this.chatTails.get(chatId) === tail) this.chatTails.delete(chatId);
    });
    return mine;
  }

  private async handInAttachment(
    message: NonNullable<Context['message']>,
    source: ReturnType<typeof sourceOfMessage>,
    caption: string,
    storing: ReturnType<TelegramAdapter['store']>,
    sink: InboundSink,
  ): Promise<void> {
    const maxBytes = this.options.maxAttachmentBytes ?? 20 * 1024 * 1024;
    const attachment = attachmentOf(message, maxBytes)!;
    const described = await storing;
    if (described.kind === 'too_large') {
      await this.bot.api.sendMessage(message.chat.id, tooLargeReply(attachment, described.bytes, maxBytes), {
        ...(source.thread_id === null ? {} : { message_thread_id: Number(source.thread_id) }),
        reply_parameters: { message_id: message.message_id, allow_sending_without_reply: true },
      });
      return;
    }
    const text = caption === '' ? described.line : `${described.line}\n${caption}`;
    await sink({ source, text, internal: false, received_at: new Date().toISOString() });
  }

  private async store(
    attachment: TelegramAttachment,
    maxBytes: number,
  ): Promise<{ kind: 'stored'; line: string } | { kind: 'too_large'; bytes: number }> {
    if (attachment.file_size !== null && attachment.file_size > maxBytes) {
      return { kind: 'too_large', bytes: attachment.file_size };
    }
    const dir = this.options.attachmentsDir;
    if (dir === undefined) {
      return { kind: 'stored', line: describeUnfetched(attachment, 'this gateway keeps no attachments') };
    }
    try {
      const file = await this.bot.api.getFile(attachment.file_id);
      if (file.file_path === undefined) throw new Error('the Bot API gave no file_path');
      const root = this.options.apiRoot?.replace(/\/+$/, '') ?? 'https://api.telegram.org';
      const url = `${root}/file/bot${this.options.token}/${file.file_path}`;
      const stored = await fetchToFile(url, dir, storedName(attachment, file.file_path), maxBytes);
      return { kind: 'stored', line: describeStored(attachment, stored.path, stored.bytes) };
    } catch (error) {
      if (error instanceof AttachmentTooLarge) return { kind: 'too_large', bytes: error.bytes };
      // The Bot API refuses getFile for files over its download limit.
      if (error instanceof GrammyError && /too big/i.test(error.description)) {
        return { kind: 'too_large', bytes: Math.max(attachment.file_size ?? 0, maxBytes + 1) };
      }
      return { kind: 'stored', line: describeUnfetched(attachment, this.scrub(oneLine(error))) };
    }
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    if (this.state === 'starting' && this.options.webhook === undefined) {
      // The API has not answered getMe yet (grammY keeps asking): nothing was received, so there
      // is nothing to confirm, and a stop does not wait for an API that may never answer.
      this.become('stopped');
      void this.bot.stop().catch(() => undefined);
      return;
    }
    // grammY's stop confirms what was handed in with one last getUpdates, refused once unconfirmable.
    if (this.bot.isRunning())
      await this.bot.stop().catch((error: unknown) => {
        if (!(error instanceof NotConfirmable)) throw error;
      });
    await this.polling;
    this.polling = null;
    // The webhook stays set: Telegram keeps what arrives meanwhile and delivers it after the restart.
    await this.listener?.close();
    this.listener = null;
    this.become('stopped');
  }

  private become(state: AdapterState): void {
    if (this.state === state) return;
    this.state = state;
    // Why the API could not be reached while starting is past once it runs.
    if (state === 'running') this.detail = null;
    this.onStatus?.(this.status());
  }

  async send(chatId: string, text: string, options: OutboundOptions): Promise<SentMessage[]> {
    const sent: SentMessage[] = [];
    const pieces = splitMessage(text === '' ? '(empty reply)' : text, TELEGRAM_MESSAGE_LIMIT);
    for (const [index, piece] of pieces.entries()) {
      const message = await this.bot.api.sendMessage(chatIdOf(chatId), piece, {
        ...(options.thread_id === null ? {} : { message_thread_id: Number(options.thread_id) }),
        // Only the first piece quotes the question; quoting a vanished message must not fail a send.
        ...(index === 0 && options.reply_to !== null && /^\d+$/.test(options.reply_to)
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
      mode: this.mode(),
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
