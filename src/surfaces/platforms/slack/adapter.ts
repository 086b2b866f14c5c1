/**
 * The Slack adapter, on Slack's official Node SDK in Socket Mode: @slack/web-api (the Web API,
 * whose 429 answers it waits out for the Retry-After Slack gives) and @slack/socket-mode (the
 * WebSocket that apps.connections.open names: hello, envelopes acknowledged by envelope_id,
 * `disconnect` messages that make it reconnect on a fresh URL). Socket Mode needs no public URL,
 * which suits a daemon behind a firewall. The Web API root is configurable (`api_root`); the
 * socket's URL is whatever apps.connections.open answers there, which is how tests reach the
 * stand-in.
 *
 * Replies are plain text split at SLACK_MESSAGE_LIMIT, in the thread they answer. Approvals are
 * Block Kit buttons (blocks.ts), tool calls a short line each. Inbound is inbound.ts. Slack offers
 * bots no typing indicator outside its assistant threads, so sendTyping shows nothing
 * (docs/decisions.md, "Slack adapter").
 */
import { botIdOf } from '../../../domain/cluster/bots.js';
import { LogLevel, SocketModeClient, type Logger } from '@slack/socket-mode';
import { WebClient } from '@slack/web-api';
import {
  allowlistAuthorizer,
  type AdapterState,
  type AdapterStatus,
  type ApprovalControls,
  type InboundSink,
  type OutboundOptions,
  type PlatformAdapter,
  type SentMessage,
  type StatusListener,
} from '../../../domain/messaging/adapter.js';
import { splitMessage } from '../../../domain/messaging/split.js';
import type { SessionSource } from '../../../domain/session/source.js';
import { buttonApprovals, toolLine } from '../native-controls.js';
import { approvalBlocks, settledBlocks } from './blocks.js';
import { SlackInbound, type Envelope } from './inbound.js';
import { SLACK_MESSAGE_LIMIT } from './source.js';

export interface SlackAdapterOptions {
  /** The bot token (xoxb-…): the Web API calls. */
  botToken: string;
  /** The app-level token (xapp-…) with connections:write: opens the Socket Mode connection. */
  appToken: string;
  /** Default https://slack.com/api. */
  apiRoot?: string;
  /** Users who may talk to the agent. Absent: everyone who can reach the bot. */
  allowedUserIds?: readonly string[];
  /** Channels answered in (DMs are not channels). Absent: every channel the bot is in. */
  allowedChannelIds?: readonly string[];
  /** Channel messages must mention the bot. Default true. */
  requireMention?: boolean;
  /** Direct messages are answered. Default true. */
  answerDms?: boolean;
}

/** The SDK's logs stay out of the daemon's: they may carry message text. */
const quiet: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: () => {},
  setLevel: () => {},
  getLevel: () => LogLevel.ERROR,
  setName: () => {},
};

export class SlackAdapter implements PlatformAdapter {
  readonly platform = 'slack';
  /** The bot's non-secret id (its lease's name in a cluster), never the token. */
  readonly botId: string;
  readonly piiSafe = false;
  readonly approvals: ApprovalControls;
  private readonly web: WebClient;
  private readonly apiUrl: string;
  private readonly allowed: (source: SessionSource) => boolean;
  private socket: SocketModeClient | null = null;
  private inbound: SlackInbound | null = null;
  private state: AdapterState = 'stopped';
  private detail: string | null = null;
  private account: string | null = null;
  private botUserId = '';
  private onStatus: StatusListener | null = null;

  constructor(private readonly options: SlackAdapterOptions) {
    this.botId = botIdOf('slack', options.appToken);
    this.apiUrl = `${(options.apiRoot ?? 'https://slack.com/api').replace(/\/+$/, '')}/`;
    // A few retries (the SDK's default keeps trying for half an hour): 429s are waited out for
    // their Retry-After either way, and a Web API that stays down fails the send to the ledger.
    this.web = new WebClient(options.botToken, {
      slackApiUrl: this.apiUrl,
      logger: quiet,
      retryConfig: { retries: 5, factor: 2, minTimeout: 500 },
    });
    this.allowed = allowlistAuthorizer(options.allowedUserIds);
    this.approvals = buttonApprovals({
      limit: Infinity,
      open: approvalBlocks,
      closed: settledBlocks,
      post: async (chatId, threadId, text, blocks) => {
        const posted = await this.web.chat.postMessage({
          channel: chatId,
          text,
          ...(blocks === null ? {} : { blocks }),
          ...(threadId === null ? {} : { thread_ts: threadId }),
        });
        return String(posted.ts);
      },
      edit: async (chatId, _threadId, ts, text, blocks) => {
        await this.web.chat.update({ channel: chatId, ts, text, blocks });
      },
    });
  }

  async start(sink: InboundSink, onStatus?: StatusListener): Promise<void> {
    if (this.state === 'running' || this.state === 'starting') return;
    this.onStatus = onStatus ?? null;
    this.detail = null;
    this.become('starting');
    try {
      const me = await this.web.auth.test();
      this.botUserId = String(me.user_id ?? '');
      this.account = `@${me.user ?? this.botUserId}`;
      const inbound = new SlackInbound(
        this.web,
        sink,
        {
          allowedChannelIds: this.options.allowedChannelIds ? new Set(this.options.allowedChannelIds) : null,
          requireMention: this.options.requireMention ?? true,
          answerDms: this.options.answerDms ?? true,
        },
        (source) => this.authorize(source),
        () => this.botUserId,
      );
      inbound.receiving = true;
      this.inbound = inbound;
      const socket = new SocketModeClient({
        appToken: this.options.appToken,
        logger: quiet,
        clientOptions: { slackApiUrl: this.apiUrl },
      });
      this.socket = socket;
      socket.on('slack_event', (envelope: Envelope) => inbound.onEnvelope(envelope));
      socket.on('connected', () => this.become('running'));
      socket.on('reconnecting', () => this.become('starting'));
      socket.on('error', (error: unknown) => {
        this.detail = this.scrub(error);
      });
      await socket.start();
      this.become('running');
    } catch (error) {
      this.detail = this.scrub(error);
      if (this.inbound !== null) this.inbound.receiving = false;
      await this.socket?.disconnect().catch(() => undefined);
      this.socket = null;
      this.become('failed');
      throw new Error(`slack: cannot connect: ${this.detail}`, { cause: error });
    }
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    if (this.inbound !== null) this.inbound.receiving = false;
    await this.socket?.disconnect().catch(() => undefined);
    this.socket = null;
    await this.inbound?.settled();
    this.become('stopped');
  }

  private become(state: AdapterState): void {
    if (this.state === state) return;
    this.state = state;
    if (state === 'running') this.detail = null;
    this.onStatus?.(this.status());
  }

  async send(chatId: string, text: string, options: OutboundOptions): Promise<SentMessage[]> {
    const sent: SentMessage[] = [];
    for (const piece of splitMessage(text === '' ? '(empty reply)' : text, SLACK_MESSAGE_LIMIT)) {
      const posted = await this.web.chat.postMessage({
        channel: chatId,
        text: piece,
        unfurl_links: false,
        unfurl_media: false,
        ...(options.thread_id === null ? {} : { thread_ts: options.thread_id }),
      });
      sent.push({ message_id: String(posted.ts) });
    }
    return sent;
  }

  async edit(chatId: string, messageId: string, text: string): Promise<void> {
    await this.web.chat.update({ channel: chatId, ts: messageId, text: text.slice(0, SLACK_MESSAGE_LIMIT) });
  }

  /** Slack has no typing indicator for bots outside assistant threads: nothing is shown. */
  async sendTyping(): Promise<void> {}

  async showToolCall(
    chatId: string,
    threadId: string | null,
    call: { name: string; arguments: string },
  ): Promise<void> {
    await this.web.chat.postMessage({
      channel: chatId,
      text: toolLine(call),
      ...(threadId === null ? {} : { thread_ts: threadId }),
    });
  }

  normalizeChatId(chatId: string): string {
    return chatId.trim();
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
      mode: 'socket',
    };
  }

  private scrub(error: unknown): string {
    let line = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
    for (const secret of [this.options.botToken, this.options.appToken])
      line = line.split(secret).join('***');
    return line;
  }
}
