/**
 * Slack inbound: Socket Mode envelopes (events_api messages and mentions, slash_commands,
 * interactive button clicks) → MessageEvents handed to the gateway, one at a time in arrival order.
 *
 * Redelivery. Slack keeps an envelope until the app acknowledges it (by its envelope_id on the
 * socket) and delivers it again, with a retry_attempt, when it was not acknowledged in time, also
 * to the next connection after a crash. So an envelope is acknowledged only once the gateway has
 * taken its event (made it durable or dropped it on purpose): a crash in between leaves Slack to
 * deliver it again, and the inbound ledger drops a redelivery of what was taken. A redelivery that
 * arrives while the first delivery is still being handed in waits for it, then is acknowledged;
 * one of an event this process saw taken is acknowledged at once.
 */
import type { WebClient } from '@slack/web-api';
import type { InboundSink, MessageEvent } from '../../../domain/messaging/adapter.js';
import type { SessionSource } from '../../../domain/session/source.js';
import { parseApprovalClick } from '../native-controls.js';
import { slashCommandText } from './blocks.js';
import {
  conversationKind,
  sourceOf,
  textForBot,
  threadOf,
  type ConversationKind,
  type SlackMessageEvent,
  type SourceFacts,
} from './source.js';

/** Lookups kept per kind (oldest dropped first): bounded whatever the size of the workspace. */
const CACHE_SIZE = 1000;
/** How many taken events a process remembers; older redeliveries are left to the inbound ledger. */
const TAKEN_KEPT = 1000;
/** Message subtypes that are something a person said; the others (edits, joins, bots) are not. */
const SPOKEN_SUBTYPES = new Set([undefined, 'file_share', 'thread_broadcast']);

/** One Socket Mode envelope as the SDK's `slack_event` hands it over. */
export interface Envelope {
  readonly type: string;
  readonly envelope_id?: string;
  readonly body: Record<string, unknown> | undefined;
  readonly retry_num?: number;
  ack(response?: Record<string, unknown>): Promise<void>;
}

export interface InboundRules {
  readonly allowedChannelIds: ReadonlySet<string> | null;
  readonly requireMention: boolean;
  readonly answerDms: boolean;
}

/** What an envelope hands in (or, with no event, only answers), and its acknowledgement's payload. */
interface Handed {
  readonly event: MessageEvent | null;
  readonly response?: Record<string, unknown>;
}

const REFUSAL = 'You are not allowed to do this here.';

/** A field of a payload that should be a string; '' when it is not. */
const field = (value: unknown): string => (typeof value === 'string' ? value : '');

interface Conversation {
  readonly name: string | null;
  readonly topic: string | null;
}

export class SlackInbound {
  private readonly users = new Map<string, Promise<string | null>>();
  private readonly conversations = new Map<string, Promise<Conversation>>();
  /** Events handed in and not yet taken, by chat and message id: a redelivery waits for them. */
  private readonly handing = new Map<string, Promise<void>>();
  /** Events this process saw taken (the newest TAKEN_KEPT): a redelivery is only acknowledged. */
  private readonly taken = new Set<string>();
  /**
   * One serial chain per conversation: its envelopes are handed in in arrival order (a name
   * lookup must not reorder them), while conversations do not wait on each other's lookups.
   */
  private readonly chains = new Map<string, Promise<void>>();
  /** False once the adapter stops: envelopes left then are not acknowledged (Slack redelivers). */
  receiving = false;

  constructor(
    private readonly web: WebClient,
    private readonly sink: InboundSink,
    private readonly rules: InboundRules,
    private readonly authorize: (source: SessionSource) => boolean,
    private readonly botUserId: () => string,
  ) {}

  onEnvelope(envelope: Envelope): void {
    const channel = channelOf(envelope.body ?? {});
    const next = (this.chains.get(channel) ?? Promise.resolve())
      .then(() => this.envelope(envelope))
      .catch(() => undefined);
    this.chains.set(channel, next);
    void next.then(() => {
      if (this.chains.get(channel) === next) this.chains.delete(channel);
    });
  }

  /** Resolves once every envelope so far was handed in. */
  settled(): Promise<void> {
    return Promise.all(this.chains.values()).then(() => undefined);
  }

  private async envelope(envelope: Envelope): Promise<void> {
    if (!this.receiving) return;
    const body = envelope.body ?? {};
    let handed: Handed | null = null;
    if (envelope.type === 'events_api') handed = await this.message(body);
    else if (envelope.type === 'slash_commands') handed = await this.command(body);
    else if (envelope.type === 'interactive') handed = await this.click(body);
    if (handed?.event == null) {
      await this.acknowledge(envelope, handed?.response);
      return;
    }
    const { event, response } = handed;
    const key = `${event.source.chat_id}\u0000${event.source.message_id}`;
    if (this.taken.has(key)) {
      await this.acknowledge(envelope);
      return;
    }
    const earlier = this.handing.get(key);
    if (earlier !== undefined) {
      // The same event, delivered again before the first delivery was taken: once it is, both go.
      earlier.then(
        () => this.acknowledge(envelope),
        () => undefined,
      );
      return;
    }
    const taken = this.sink(event).then(() => {
      this.taken.add(key);
      if (this.taken.size > TAKEN_KEPT) this.taken.delete(this.taken.values().next().value!);
      return this.acknowledge(envelope, response);
    });
    // NotConfirmable (the bots' leases going) skips the ack: Slack redelivers to the next holder.
    this.handing.set(key, taken);
    taken.then(
      () => this.handing.delete(key),
      () => this.handing.delete(key),
    );
  }

  private async acknowledge(envelope: Envelope, response?: Record<string, unknown>): Promise<void> {
    if (!this.receiving) return;
    await envelope.ack(response).catch(() => undefined); // a lost ack: Slack redelivers, the ledger drops it
  }

  /** A `message` or `app_mention` event; null when it is not for the bot. */
  private async message(body: Record<string, unknown>): Promise<Handed | null> {
    const event = body.event as SlackMessageEvent | undefined;
    if (event === undefined || (event.type !== 'message' && event.type !== 'app_mention')) return null;
    const { channel, user, ts } = event;
    if (channel === undefined || user === undefined || ts === undefined) return null;
    if (!SPOKEN_SUBTYPES.has(event.subtype) || event.bot_id !== undefined || user === this.botUserId()) {
      return null;
    }
    const kind = conversationKind(event.channel_type, channel);
    if (kind === 'im' ? !this.rules.answerDms : !this.channelAllowed(channel)) return null;
    const text = textForBot(event.text ?? '', this.botUserId(), kind !== 'im' && this.rules.requireMention);
    if (text === null || text === '') return null;
    const teamId = typeof body.team_id === 'string' ? body.team_id : (event.team ?? null);
    const source = await this.sourceOf({
      teamId,
      channelId: channel,
      kind,
      userId: user,
      threadTs: threadOf(event),
      messageId: ts,
    });
    return { event: { source, text, internal: false, received_at: new Date().toISOString() } };
  }

  /** A slash command (`/stop`, `/gatehouse stop`): the chat command it names, in its channel. */
  private async command(body: Record<string, unknown>): Promise<Handed | null> {
    const text = slashCommandText(field(body.command), field(body.text));
    const channel = field(body.channel_id);
    const user = field(body.user_id);
    if (text === null || channel === '' || user === '') return null;
    const kind = conversationKind(undefined, channel);
    if (kind !== 'im' && !this.channelAllowed(channel)) return null;
    const source = await this.sourceOf({
      teamId: typeof body.team_id === 'string' ? body.team_id : null,
      channelId: channel,
      kind,
      userId: user,
      // Slack sends no thread with a slash command: it applies to the channel's own conversation.
      threadTs: null,
      messageId: `command:${field(body.trigger_id)}`,
    });
    if (!this.authorize(source)) return { event: null, response: { text: REFUSAL } };
    // The acknowledgement's text is shown to the one who typed the command only.
    return {
      event: { source, text, internal: false, received_at: new Date().toISOString() },
      response: { text: `\`${text}\`` },
    };
  }

  /** A click on an approval button: /approve or /deny bound to the prompt it was asked for. */
  private async click(body: Record<string, unknown>): Promise<Handed | null> {
    if (body.type !== 'block_actions') return null;
    const action = (body.actions as { action_id?: string; action_ts?: string }[] | undefined)?.[0];
    const click = action?.action_id === undefined ? null : parseApprovalClick(action.action_id);
    const channel = (body.channel as { id?: string } | undefined)?.id;
    const user = (body.user as { id?: string } | undefined)?.id;
    const message = body.message as { ts?: string; thread_ts?: string } | undefined;
    if (click === null || channel === undefined || user === undefined) return null;
    const source = await this.sourceOf({
      teamId: (body.team as { id?: string } | undefined)?.id ?? null,
      channelId: channel,
      kind: conversationKind(undefined, channel),
      userId: user,
      threadTs: message?.thread_ts ?? null,
      messageId: `action:${action?.action_ts ?? field(body.trigger_id)}`,
    });
    if (!this.authorize(source)) {
      // Refused where only the one who clicked sees it; nothing reaches the gateway.
      await this.web.chat
        .postEphemeral({
          channel,
          user,
          text: REFUSAL,
          ...(message?.thread_ts === undefined ? {} : { thread_ts: message.thread_ts }),
        })
        .catch(() => undefined);
      return null;
    }
    const event: MessageEvent = {
      source,
      text: click.text,
      internal: false,
      received_at: new Date().toISOString(),
      prompt: click.prompt,
    };
    return { event };
  }

  private channelAllowed(channel: string): boolean {
    const allowed = this.rules.allowedChannelIds;
    return allowed === null || allowed.has(channel) || channel.startsWith('D');
  }

  private async sourceOf(
    facts: Omit<SourceFacts, 'channelName' | 'channelTopic' | 'userName' | 'isBot'> & {
      kind: ConversationKind;
    },
  ): Promise<SessionSource> {
    const [userName, conversation] = await Promise.all([
      this.userName(facts.userId),
      facts.kind === 'im' ? Promise.resolve({ name: null, topic: null }) : this.conversation(facts.channelId),
    ]);
    return sourceOf({
      ...facts,
      userName,
      channelName: conversation.name,
      channelTopic: conversation.topic,
      isBot: false,
    });
  }

  /** The name a person goes by (display name, else real name, else handle), cached; null if unknown. */
  private userName(userId: string): Promise<string | null> {
    return cached(
      this.users,
      userId,
      async () => {
        const { user } = await this.web.users.info({ user: userId });
        const profile = user?.profile;
        return profile?.display_name || profile?.real_name || user?.real_name || user?.name || null;
      },
      null,
    );
  }

  private conversation(channelId: string): Promise<Conversation> {
    return cached(
      this.conversations,
      channelId,
      async () => {
        const { channel } = await this.web.conversations.info({ channel: channelId });
        return {
          name: channel?.name ?? null,
          topic: channel?.topic?.value || channel?.purpose?.value || null,
        };
      },
      { name: null, topic: null },
    );
  }
}

/** The conversation an envelope's payload is about, whatever its type ('' when it names none). */
function channelOf(body: Record<string, unknown>): string {
  const event = body.event as { channel?: unknown } | undefined;
  const channel = body.channel as { id?: unknown } | undefined;
  return field(event?.channel) || field(body.channel_id) || field(channel?.id);
}

/**
 * A bounded cache of lookups. A failed lookup answers `fallback` and is forgotten, so the next
 * message asks again (a lookup must never keep a message from the agent).
 */
function cached<T>(
  cache: Map<string, Promise<T>>,
  key: string,
  look: () => Promise<T>,
  fallback: T,
): Promise<T> {
  let found = cache.get(key);
  if (found === undefined) {
    found = look().catch(() => {
      cache.delete(key);
      return fallback;
    });
    cache.set(key, found);
    if (cache.size > CACHE_SIZE) cache.delete(cache.keys().next().value!);
  }
  return found;
}
