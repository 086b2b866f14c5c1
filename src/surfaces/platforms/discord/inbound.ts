/**
 * Discord inbound: gateway dispatches (MESSAGE_CREATE, INTERACTION_CREATE) and the REST catch-up
 * → MessageEvents handed to the gateway, one at a time in arrival order, and the catch-up cursors.
 *
 * Redelivery. Discord replays missed events only to a session that RESUMEs; after a crash the
 * adapter IDENTIFYs afresh and the gateway sends nothing that was said meanwhile. So every channel
 * keeps a cursor (domain/ports/platform-cursors.ts): the newest message up to which everything was taken
 * (ChannelCursor). On every READY (a first connect, or a re-IDENTIFY after an invalid session) the
 * channels with a cursor are read after it over REST, before any live message is handed in; the
 * inbound ledger drops what was taken already. A message handed in but not taken when the process
 * died is after its cursor, so it is read again: nothing is lost, nothing is doubled.
 */
import type { API } from '@discordjs/core';
import {
  ChannelType,
  InteractionType,
  MessageFlags,
  type APIInteraction,
  type APIMessage,
  type APIUser,
  type GatewayMessageCreateDispatchData,
} from 'discord-api-types/v10';
import type { InboundSink, MessageEvent } from '../../../domain/messaging/adapter.js';
import type { SessionSource } from '../../../domain/session/source.js';
import type { PlatformCursors } from '../../../domain/ports/platform-cursors.js';
import { commandText, parseApprovalClick } from './commands.js';
import { ChannelCursor, snowflake } from './cursor.js';
import { channelFactsOf, hasAllowedRole, sourceOf, textForBot, type ChannelFacts } from './source.js';

/** Channel lookups kept (oldest dropped first): bounded whatever the number of channels. */
const CHANNEL_CACHE = 1000;
/** How many messages a channel's catch-up reads at most (one REST page). */
const CATCH_UP_LIMIT = 100;
/** How long a moved cursor waits to be written with the others. */
const CURSOR_FLUSH_MS = 200;

export interface InboundRules {
  readonly allowedUserIds: ReadonlySet<string> | null;
  readonly allowedRoleIds: ReadonlySet<string>;
  readonly allowedChannelIds: ReadonlySet<string> | null;
  readonly requireMention: boolean;
  readonly answerDms: boolean;
}

type Facts = ChannelFacts & { guild_id: string | null };

const dmFacts = (id: string): Facts => ({
  id,
  type: ChannelType.DM,
  name: null,
  parent_id: null,
  topic: null,
  guild_id: null,
});

export class DiscordInbound {
  private readonly channels = new Map<string, Promise<Facts>>();
  private readonly cursors = new Map<string, ChannelCursor>();
  /** Channels with a cursor row in the store: only these are read back at a READY. */
  private readonly stored = new Set<string>();
  /** The serial chain every inbound event goes through (lookups must not reorder a channel). */
  private chain: Promise<void> = Promise.resolve();
  /** Cursors moved and not yet written (one per channel), and the timer that writes them. */
  private readonly unsaved = new Map<string, string>();
  private flushTimer: NodeJS.Timeout | null = null;
  /** False once the adapter stops: what the gateway drops then must not move a cursor. */
  receiving = false;

  constructor(
    private readonly api: API,
    private readonly sink: InboundSink,
    private readonly rules: InboundRules,
    private readonly authorize: (source: SessionSource) => boolean,
    private readonly store: PlatformCursors | null,
    private readonly botId: () => string,
  ) {}

  /** Loads the saved cursors; before the first READY. */
  async load(): Promise<void> {
    if (this.store === null) return;
    for (const [channel, id] of await this.store.readCursors('discord')) {
      this.cursors.set(channel, new ChannelCursor(snowflake(id)));
      this.stored.add(channel);
    }
  }

  /** A READY: read every known channel after its cursor, before live messages go on. */
  catchUp(): void {
    this.enqueue(async () => {
      for (const [channelId, cursor] of [...this.cursors]) {
        let messages: APIMessage[];
        try {
          messages = await this.api.channels.getMessages(channelId, {
            after: String(cursor.value),
            limit: CATCH_UP_LIMIT,
          });
        } catch {
          continue; // a channel the bot lost access to; the others still catch up
        }
        messages.sort((a, b) => (snowflake(a.id) < snowflake(b.id) ? -1 : 1));
        for (const message of messages) await this.message(message, true);
      }
    });
  }

  onMessage(data: GatewayMessageCreateDispatchData): void {
    this.enqueue(() => this.message(data, false));
  }

  onInteraction(interaction: APIInteraction): void {
    this.enqueue(() => this.interaction(interaction));
  }

  /** Resolves once every event so far was handed in. */
  settled(): Promise<void> {
    return this.chain;
  }

  private enqueue(step: () => Promise<void>): void {
    this.chain = this.chain.then(step).catch(() => undefined);
  }

  private async message(
    data: APIMessage & { guild_id?: string; member?: { roles: string[] } },
    caughtUp: boolean,
  ): Promise<void> {
    const author = data.author;
    const cursor = this.cursorOf(data.channel_id);
    const id = snowflake(data.id);
    if (id <= cursor.value) return;
    await this.anchor(data.channel_id, id);
    cursor.handed(id);
    const event = await this.eventOf(data, caughtUp).catch(() => null);
    if (event === null || author.id === this.botId() || author.bot === true) {
      this.taken(data.channel_id, id);
      return;
    }
    // NotConfirmable (the bots' leases going): not marked taken; the next holder catches up.
    this.sink(event).then(
      () => this.taken(data.channel_id, id),
      () => undefined,
    );
  }

  private async eventOf(
    data: APIMessage & { guild_id?: string; member?: { roles: string[] } },
    caughtUp: boolean,
  ): Promise<MessageEvent | null> {
    // A live MESSAGE_CREATE names its guild, so one without is a DM (bots are never in group
    // DMs) and needs no lookup; a message read back over REST carries no guild id, so it does.
    const facts =
      !caughtUp && data.guild_id === undefined
        ? dmFacts(data.channel_id)
        : await this.channel(data.channel_id);
    const guildId = data.guild_id ?? facts.guild_id;
    if (guildId === null) {
      if (!this.rules.answerDms) return null;
    } else {
      const allowed = this.rules.allowedChannelIds;
      if (
        allowed !== null &&
        !allowed.has(facts.id) &&
        !(facts.parent_id !== null && allowed.has(facts.parent_id))
      )
        return null;
    }
    const text =
      guildId === null ? data.content.trim() : textForBot(data, this.botId(), this.rules.requireMention);
    if (text === null || text === '') return null;
    const roles =
      data.member ?? (caughtUp && guildId !== null ? await this.member(guildId, data.author) : undefined);
    const source = sourceOf({
      messageId: data.id,
      author: data.author,
      guildId,
      channel: facts,
      roleAuthorized: guildId !== null && hasAllowedRole(roles, this.rules.allowedRoleIds),
    });
    return { source, text, internal: false, received_at: new Date().toISOString() };
  }

  private async interaction(interaction: APIInteraction): Promise<void> {
    const user = interaction.member?.user ?? interaction.user;
    const channelId = interaction.channel?.id;
    if (user === undefined || channelId === undefined) return;
    let text: string | null = null;
    let prompt: MessageEvent['prompt'];
    if (interaction.type === InteractionType.ApplicationCommand && 'name' in interaction.data) {
      text = commandText(
        interaction.data.name,
        'options' in interaction.data ? interaction.data.options : undefined,
      );
    } else if (interaction.type === InteractionType.MessageComponent) {
      const click = parseApprovalClick(interaction.data.custom_id);
      if (click !== null) ({ text, prompt } = click);
    }
    if (text === null) return;
    const facts = await this.channel(channelId);
    const guildId = interaction.guild_id ?? null;
    const source = sourceOf({
      messageId: interaction.id,
      author: user,
      guildId,
      channel: facts,
      roleAuthorized: guildId !== null && hasAllowedRole(interaction.member, this.rules.allowedRoleIds),
    });
    const respond = (body: Parameters<API['interactions']['reply']>[2]) =>
      this.api.interactions.reply(interaction.id, interaction.token, body).catch(() => undefined);
    if (!this.authorize(source)) {
      // Refused where only the one who clicked sees it; nothing reaches the gateway.
      await respond({ content: 'You are not allowed to do this here.', flags: MessageFlags.Ephemeral });
      return;
    }
    const event: MessageEvent = {
      source,
      text,
      internal: false,
      received_at: new Date().toISOString(),
      ...(prompt === undefined ? {} : { prompt }),
    };
    // Discord wants an answer within 3 s: the gateway answers in the channel, so the interaction
    // is acknowledged as soon as the gateway has taken the event.
    void this.sink(event).then(
      async () => {
        if (interaction.type === InteractionType.MessageComponent) {
          await this.api.interactions
            .deferMessageUpdate(interaction.id, interaction.token)
            .catch(() => undefined);
        } else {
          await respond({ content: `\`${text}\`` });
        }
      },
      () => undefined,
    ); // NotConfirmable: not acknowledged
  }

  /**
   * A channel's first message: its cursor row is written (just before the message) before the
   * message is handed in. A channel with no row is never read back, so the batched writes alone
   * would lose what was said there while the daemon was down whenever it died within one batch
   * of the channel's first message.
   */
  private async anchor(channelId: string, id: bigint): Promise<void> {
    if (this.store === null || this.stored.has(channelId)) return;
    this.stored.add(channelId);
    await this.store
      .saveCursor('discord', channelId, String(id - 1n))
      .catch(() => this.stored.delete(channelId));
  }

  private taken(channelId: string, id: bigint): void {
    if (!this.receiving) return;
    const moved = this.cursorOf(channelId).taken(id);
    if (moved === null || this.store === null) return;
    // Saved in batches: a cursor a crash left behind only makes the catch-up read (and the inbound
    // ledger drop) a few messages again, so it need not cost a commit per message.
    this.unsaved.set(channelId, String(moved));
    this.flushTimer ??= setTimeout(() => void this.flush(), CURSOR_FLUSH_MS).unref();
  }

  /** Writes the cursors that moved since the last flush (also when the adapter stops). */
  async flush(): Promise<void> {
    if (this.flushTimer !== null) clearTimeout(this.flushTimer);
    this.flushTimer = null;
    const batch = [...this.unsaved];
    this.unsaved.clear();
    for (const [channel, id] of batch)
      await this.store?.saveCursor('discord', channel, id).catch(() => undefined);
  }

  private cursorOf(channelId: string): ChannelCursor {
    let cursor = this.cursors.get(channelId);
    if (cursor === undefined) {
      cursor = new ChannelCursor(0n);
      this.cursors.set(channelId, cursor);
    }
    return cursor;
  }

  /** The channel a message was posted in (its type tells a thread from a channel), cached. */
  private channel(channelId: string): Promise<Facts> {
    let facts = this.channels.get(channelId);
    if (facts === undefined) {
      facts = this.api.channels.get(channelId).then((channel) => ({
        ...channelFactsOf(channel),
        guild_id: 'guild_id' in channel ? (channel.guild_id ?? null) : null,
      }));
      facts.catch(() => this.channels.delete(channelId));
      this.channels.set(channelId, facts);
      if (this.channels.size > CHANNEL_CACHE) this.channels.delete(this.channels.keys().next().value!);
    }
    return facts;
  }

  private async member(guildId: string, user: APIUser): Promise<{ roles: string[] } | undefined> {
    if (this.rules.allowedRoleIds.size === 0) return undefined;
    return this.api.guilds.getMember(guildId, user.id).catch(() => undefined);
  }
}
