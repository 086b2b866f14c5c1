/**
 * The platform adapter contract: what a chat platform (Telegram, a plugin's own) implements so the
 * messaging gateway can talk through it. Types only; adapters live in surfaces/platforms.
 *
 * Terms:
 *   inbound    A MessageEvent the adapter hands to the gateway (a human message or a wake-up).
 *   outbound   send / edit / typing calls the gateway makes. Sending stays possible after stop():
 *              stop ends *receiving*, so replies of turns finishing during a drain still go out.
 *   authorize  The adapter's own rule of who may talk to the agent (an allowlist of user ids, or a
 *              platform role the adapter checked and stamped as `role_authorized` on the source).
 */
import type { SessionSource } from '../session/source.js';
import type { Platform } from '../vocabulary.js';

/** One inbound message, normalised. */
export interface MessageEvent {
  readonly source: SessionSource;
  readonly text: string;
  /**
   * An internal wake-up (a delegation finished, a scheduled notify+wake, a restart auto-continue)
   * rather than a human message. It survives /stop, /new and /reset (QUE-2).
   */
  readonly internal: boolean;
  /** ISO-8601 UTC, when the gateway received it. */
  readonly received_at: string;
  /**
   * The approval prompt a native button answers (an /approve or /deny the adapter made of a
   * click): the command then answers exactly this prompt, or says it is no longer open.
   */
  readonly prompt?: ApprovalBinding;
  /**
   * Issue 28: a message sent while a turn ran on a platform set to `during_turn: steer`. It waits
   * (durably, on the backlog) for the running turn's next step boundary, where it is applied to
   * that turn; one that arrives after the turn's last model call runs as the next turn's input.
   */
  readonly steer?: true;
}

/** One approval prompt, exactly: its id and the execution generation that asked it. */
export interface ApprovalBinding {
  readonly prompt_id: string;
  readonly execution_generation: number;
}

/** An approval to render with the platform's own controls (buttons). */
export interface ApprovalPrompt extends ApprovalBinding {
  /** What to show: the reason and the command, as the text fallback says it. */
  readonly text: string;
}

/**
 * How an approval's message ended, as its rendered controls show it once disabled: answered, or
 * `replaced`: a restart asked the same prompt again under a newer execution generation, in a new
 * message, so this one's buttons answer nothing any more (REC-7).
 */
export type ApprovalResult =
  | 'approved once'
  | 'approved for the session'
  | 'approved always'
  | 'denied'
  | 'expired'
  | 'cancelled'
  | 'replaced';

/**
 * Native approval controls, for an adapter whose platform has buttons. The gateway asks with
 * ask(); a click comes back as an /approve or /deny MessageEvent carrying `prompt`. Once the prompt
 * is settled, however it was answered (a click, a typed /approve, the timeout), or asked again
 * after a restart (`replaced`), settle() disables the controls and shows the result. The chat and
 * thread are the ones ask() was given, so a message can be settled by a later process.
 */
export interface ApprovalControls {
  ask(chatId: string, threadId: string | null, prompt: ApprovalPrompt): Promise<SentMessage>;
  settle(
    chatId: string,
    threadId: string | null,
    messageId: string,
    prompt: ApprovalPrompt,
    result: ApprovalResult,
  ): Promise<void>;
}

export interface OutboundOptions {
  /** Forum topic / thread to post in. */
  readonly thread_id: string | null;
  /** The platform message id this answers, when the platform threads replies. */
  readonly reply_to: string | null;
}

export interface SentMessage {
  readonly message_id: string;
}

export type AdapterState = 'stopped' | 'starting' | 'running' | 'failed';

export interface AdapterStatus {
  readonly platform: Platform;
  readonly state: AdapterState;
  /** A one-line reason when failed. */
  readonly detail: string | null;
  /** Who the adapter is connected as once running (e.g. a bot's `@username`), when the platform says. */
  readonly account?: string | null;
  /**
   * How a running adapter receives, in a word, for operators: `polling`, `webhook`, `socket`.
   * Absent: status lines just say `running`.
   */
  readonly mode?: string | null;
  /** A start that failed is tried again at this time (the platform's API could not be reached). */
  readonly retry_at?: string | null;
}

/** Told every change of an adapter's status (the gateway republishes it). Must not throw. */
export type StatusListener = (status: AdapterStatus) => void;

/**
 * Where an adapter hands inbound events; the gateway's handler. Never throws; rejects only with
 * NotConfirmable.
 *
 * The promise resolves once the gateway has taken the event: made it durable (it survives a crash
 * from then on) or dropped it on purpose (unauthorized, a redelivery, the gateway is stopping).
 * An adapter must not acknowledge the event to its platform before that (Telegram: confirm the
 * update with the next getUpdates offset; a webhook: answer the request), so a crash in between
 * leaves the platform to deliver it again; redeliveries of taken events are dropped. It resolves
 * when the event is queued or its turn has started, not when the turn ends, so an adapter may
 * await it per event without one slow chat holding up the others for longer than a few writes.
 */
export type InboundSink = (event: MessageEvent) => Promise<void>;

/**
 * The sink's one rejection (SCL-1): this instance lost, or is losing, the right to act for its bots
 * (a cluster's bot lease), so what it was handed may not have been taken. The adapter then confirms
 * nothing more to its platform (no later getUpdates offset, no ack), and the platform hands the
 * event to the instance that takes the bots over.
 */
export class NotConfirmable extends Error {
  constructor() {
    super('this instance may no longer act for its chat bots: nothing is confirmed to the platform');
    this.name = 'NotConfirmable';
  }
}

export interface PlatformAdapter {
  /** The platform name used in sources and keys; a plugin may pick any non-empty name. */
  readonly platform: Platform;
  /**
   * A non-secret id of the bot this adapter receives as, the same on every instance configured
   * with it (Telegram's bot id, Slack's app id, Discord's bot user id: botIdOf in
   * domain/cluster/bots.ts). In a cluster it names the bot's lease. Absent: the platform name.
   */
  readonly botId?: string;
  /**
   * The ids this platform puts in prompts may be replaced by hashes (CTX-2). Core platforms other
   * than Discord are treated as safe regardless; a plugin opts in with true.
   */
  readonly piiSafe: boolean;
  /**
   * Begin receiving; resolves once connected. Rejects with a one-line reason. `onStatus` is told
   * every later change of status() too (receiving that dies after start, a reconnect), so
   * `gatehouse status` stays true; an adapter whose status never changes may ignore it.
   */
  start(sink: InboundSink, onStatus?: StatusListener): Promise<void>;
  /** Stop receiving. Idempotent. */
  stop(): Promise<void>;
  /** Sends `text`, split as the platform needs; returns every message sent, in order. */
  send(chatId: string, text: string, options: OutboundOptions): Promise<SentMessage[]>;
  edit(chatId: string, messageId: string, text: string): Promise<void>;
  /** Shows "typing…" in the chat (the platform decides how long it lasts). */
  sendTyping(chatId: string, threadId: string | null): Promise<void>;
  /** Buttons for approvals; absent: the approval is a text message answered by /approve or /deny. */
  readonly approvals?: ApprovalControls;
  /** Shows a tool call as the turn starts it; absent: tool calls are not shown in the chat. */
  showToolCall?(
    chatId: string,
    threadId: string | null,
    call: { name: string; arguments: string },
  ): Promise<void>;
  /** The canonical form of a chat id as this platform writes it (so one chat is one key). */
  normalizeChatId(chatId: string): string;
  /** Whether the sender of `source` may talk to the agent. */
  authorize(source: SessionSource): boolean;
  status(): AdapterStatus;
}

/** How the gateway recognises one platform message across redeliveries. */
export interface InboundRef {
  readonly platform: Platform;
  /** As the adapter's normalizeChatId writes it. */
  readonly chat_id: string;
  readonly message_id: string;
}

/**
 * The InboundRef of a human message; null for a wake-up (no platform delivered it) and for a
 * message the platform gave no id (it cannot be recognised, so it is never de-duplicated).
 */
export function inboundRefOf(
  event: MessageEvent,
  normalizeChatId: (chatId: string) => string,
): InboundRef | null {
  const { platform, chat_id, message_id } = event.source;
  if (event.internal || message_id === null || message_id === '') return null;
  return { platform, chat_id: normalizeChatId(chat_id), message_id };
}

/** Authorization by a user-id allowlist, or a role the adapter verified. Absent list: everyone. */
export function allowlistAuthorizer(
  allowedUserIds: readonly string[] | undefined,
): (source: SessionSource) => boolean {
  if (allowedUserIds === undefined) return () => true;
  const allowed = new Set(allowedUserIds);
  return (source) =>
    source.role_authorized ||
    (source.user_id !== null && allowed.has(source.user_id)) ||
    (source.user_id_alt !== null && allowed.has(source.user_id_alt));
}
