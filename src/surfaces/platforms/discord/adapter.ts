/**
 * The Discord adapter, on the discord.js project's own building blocks: @discordjs/rest (REST,
 * with Discord's rate limits: 429 answers are waited out as retry-after and the bucket headers
 * say) and @discordjs/ws (the gateway: HELLO, IDENTIFY, heartbeats, RESUME after a reconnect
 * (op 7), a fresh IDENTIFY after an invalid session (op 9)). The API root is configurable (REST's
 * `api`); the gateway URL is what GET /gateway/bot answers, which is how tests reach the stand-in.
 *
 * Replies are plain content split at Discord's 2,000 characters (splitMessage keeps code fences
 * balanced per message), with mentions limited to users. Approvals are buttons (commands.ts), tool
 * calls a short line each. Inbound and the catch-up after a restart are inbound.ts.
 */
import { botIdOf } from '../../../domain/cluster/bots.js';
import { API } from '@discordjs/core';
import { REST, RESTEvents } from '@discordjs/rest';
import { WebSocketManager, WebSocketShardEvents } from '@discordjs/ws';
import {
  AllowedMentionsTypes,
  GatewayDispatchEvents,
  GatewayIntentBits,
  type GatewayDispatchPayload,
  type GatewayReadyDispatchData,
} from 'discord-api-types/v10';
import {
  allowlistAuthorizer,
  type ApprovalControls,
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
import type { PlatformCursors } from '../../../domain/ports/platform-cursors.js';
import { buttonApprovals, toolLine } from '../native-controls.js';
import { approvalButtons, slashCommandsBody } from './commands.js';
import { DiscordInbound } from './inbound.js';
import { channelOfTarget, DISCORD_MESSAGE_LIMIT } from './source.js';

export interface DiscordAdapterOptions {
  token: string;
  /** Default https://discord.com/api. */
  apiRoot?: string;
  /** Users who may talk to the agent. With neither this nor allowedRoleIds: everyone who can reach the bot. */
  allowedUserIds?: readonly string[];
  /** Guild members with one of these roles may talk to the agent (role_authorized). */
  allowedRoleIds?: readonly string[];
  /** Guild channels answered in (threads by their parent). Absent: every channel. */
  allowedChannelIds?: readonly string[];
  /** Guild messages must mention the bot. Default true. */
  requireMention?: boolean;
  /** Direct messages are answered. Default true. */
  answerDms?: boolean;
  /** Register the slash commands at start. Default true. */
  registerCommands?: boolean;
  /** Where the catch-up cursors are kept; absent: no catch-up after a restart. */
  cursors?: PlatformCursors;
}

const INTENTS =
  GatewayIntentBits.Guilds |
  GatewayIntentBits.GuildMessages |
  GatewayIntentBits.DirectMessages |
  GatewayIntentBits.MessageContent;

/** How long past the end of a global rate-limit wait typing stays off. */
const TYPING_BACKOFF_MS = 1000;

export class DiscordAdapter implements PlatformAdapter {
  readonly platform = 'discord';
  /** The bot's non-secret id (its lease's name in a cluster), never the token. */
  readonly botId: string;
  /** CTX-2: Discord ids are never redacted (the agent writes `<@id>` mentions with them). */
  readonly piiSafe = false;
  readonly approvals: ApprovalControls;
  private readonly rest: REST;
  private readonly api: API;
  private readonly allowed: (source: SessionSource) => boolean;
  private gateway: WebSocketManager | null = null;
  private inbound: DiscordInbound | null = null;
  private state: AdapterState = 'stopped';
  private detail: string | null = null;
  private account: string | null = null;
  private selfId = '';
  private onStatus: StatusListener | null = null;
  /** Until when "typing…" is not sent: the bot's global request budget ran out (see sendTyping). */
  private budgetSpentUntil = 0;

  constructor(private readonly options: DiscordAdapterOptions) {
    this.botId = botIdOf('discord', options.token);
    this.rest = new REST({
      version: '10',
      ...(options.apiRoot === undefined ? {} : { api: options.apiRoot.replace(/\/+$/, '') }),
    }).setToken(options.token);
    this.api = new API(this.rest);
    // The library holds requests to Discord's global limit (50 per second per bot). A request had
    // to wait for it: replies are queued, so for the next second or two typing gives way to them.
    this.rest.on(RESTEvents.RateLimited, (limit) => {
      if (limit.global) this.budgetSpentUntil = Date.now() + limit.timeToReset + TYPING_BACKOFF_MS;
    });
    const roles = options.allowedRoleIds ?? [];
    // Roles alone restrict too: only their holders (stamped role_authorized) pass.
    this.allowed = allowlistAuthorizer(options.allowedUserIds ?? (roles.length > 0 ? [] : undefined));
    // A thread is a channel of its own: the approval is posted, and edited, there.
    this.approvals = buttonApprovals({
      limit: DISCORD_MESSAGE_LIMIT,
      open: (prompt) => approvalButtons(prompt, false),
      closed: (prompt) => approvalButtons(prompt, true),
      post: async (chatId, threadId, content, components) => {
        const message = await this.api.channels.createMessage(channelOfTarget(chatId, threadId), {
          content,
          ...(components === null ? {} : { components }),
          allowed_mentions: { parse: [] },
        });
        return message.id;
      },
      edit: async (chatId, threadId, messageId, content, components) => {
        await this.api.channels.editMessage(channelOfTarget(chatId, threadId), messageId, {
          content,
          components,
        });
      },
    });
  }

  async start(sink: InboundSink, onStatus?: StatusListener): Promise<void> {
    if (this.state === 'running' || this.state === 'starting') return;
    this.onStatus = onStatus ?? null;
    this.detail = null;
    this.become('starting');
    try {
      const me = await this.api.users.getCurrent();
      this.selfId = me.id;
      this.account = `@${me.username}`;
      const inbound = new DiscordInbound(
        this.api,
        sink,
        {
          allowedUserIds: this.options.allowedUserIds ? new Set(this.options.allowedUserIds) : null,
          allowedRoleIds: new Set(this.options.allowedRoleIds ?? []),
          allowedChannelIds: this.options.allowedChannelIds ? new Set(this.options.allowedChannelIds) : null,
          requireMention: this.options.requireMention ?? true,
          answerDms: this.options.answerDms ?? true,
        },
        (source) => this.authorize(source),
        this.options.cursors ?? null,
        () => this.selfId,
      );
      await inbound.load();
      inbound.receiving = true;
      this.inbound = inbound;
      const gateway = new WebSocketManager({ token: this.options.token, intents: INTENTS, rest: this.rest });
      this.gateway = gateway;
      gateway.on(WebSocketShardEvents.Dispatch, (payload) => this.dispatch(payload));
      gateway.on(WebSocketShardEvents.Closed, () => {
        if (this.state === 'running') this.become('starting');
      });
      gateway.on(WebSocketShardEvents.Resumed, () => this.become('running'));
      gateway.on(WebSocketShardEvents.Error, (error) => {
        this.detail = this.scrub(error);
      });
      await gateway.connect();
      this.become('running');
    } catch (error) {
      this.detail = this.scrub(error);
      await Promise.resolve(this.gateway?.destroy()).catch(() => undefined);
      this.gateway = null;
      this.become('failed');
      throw new Error(`discord: cannot connect: ${this.detail}`, { cause: error });
    }
  }

  async stop(): Promise<void> {
    if (this.state === 'stopped') return;
    if (this.inbound !== null) this.inbound.receiving = false;
    await Promise.resolve(this.gateway?.destroy()).catch(() => undefined);
    this.gateway = null;
    await this.inbound?.settled();
    await this.inbound?.flush();
    this.become('stopped');
  }

  private dispatch(payload: GatewayDispatchPayload): void {
    const inbound = this.inbound;
    if (inbound === null || !inbound.receiving) return;
    if (payload.t === GatewayDispatchEvents.Ready) this.ready(payload.d, inbound);
    else if (payload.t === GatewayDispatchEvents.MessageCreate) inbound.onMessage(payload.d);
    else if (payload.t === GatewayDispatchEvents.InteractionCreate) inbound.onInteraction(payload.d);
  }

  /** A new gateway session: nothing said before it will be replayed, so the channels catch up. */
  private ready(data: GatewayReadyDispatchData, inbound: DiscordInbound): void {
    this.selfId = data.user.id;
    this.account = `@${data.user.username}`;
    inbound.catchUp();
    this.become('running');
    if (this.options.registerCommands ?? true) {
      void this.api.applicationCommands
        .bulkOverwriteGlobalCommands(data.application.id, slashCommandsBody())
        .catch((error: unknown) => {
          this.detail = `slash commands not registered: ${this.scrub(error)}`;
          this.onStatus?.(this.status());
        });
    }
  }

  private become(state: AdapterState): void {
    if (this.state === state) return;
    this.state = state;
    if (state === 'running') this.detail = null;
    this.onStatus?.(this.status());
  }

  async send(chatId: string, text: string, options: OutboundOptions): Promise<SentMessage[]> {
    const channel = channelOfTarget(chatId, options.thread_id);
    const sent: SentMessage[] = [];
    const pieces = splitMessage(text === '' ? '(empty reply)' : text, DISCORD_MESSAGE_LIMIT);
    for (const [index, piece] of pieces.entries()) {
      const message = await this.api.channels.createMessage(channel, {
        content: piece,
        allowed_mentions: { parse: [AllowedMentionsTypes.User] },
        // Only the first piece quotes the question; a vanished message must not fail the send.
        ...(index === 0 && options.reply_to !== null
          ? { message_reference: { message_id: options.reply_to, fail_if_not_exists: false } }
          : {}),
      });
      sent.push({ message_id: message.id });
    }
    return sent;
  }

  async edit(chatId: string, messageId: string, text: string): Promise<void> {
    await this.api.channels.editMessage(chatId, messageId, { content: text.slice(0, DISCORD_MESSAGE_LIMIT) });
  }

  /**
   * "typing…" is cosmetic: while the global request budget is spent it is skipped, so it never
   * queues ahead of a reply (docs/decisions.md, "Typing on Discord").
   */
  async sendTyping(chatId: string, threadId: string | null): Promise<void> {
    if (Date.now() < this.budgetSpentUntil) return;
    await this.api.channels.showTyping(channelOfTarget(chatId, threadId));
  }

  async showToolCall(
    chatId: string,
    threadId: string | null,
    call: { name: string; arguments: string },
  ): Promise<void> {
    await this.api.channels.createMessage(channelOfTarget(chatId, threadId), {
      content: toolLine(call),
      allowed_mentions: { parse: [] },
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
      mode: 'gateway',
    };
  }

  private scrub(error: unknown): string {
    const line = (error instanceof Error ? error.message : String(error)).split('\n')[0]!;
    return line.split(this.options.token).join('***');
  }
}
