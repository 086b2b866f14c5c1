/**
 * The delivery ledger contract (SPEC REC-4): a reply a chat is owed is recorded as an obligation
 * before it is sent and marked delivered after. Recording a reply is also what ends a turn's
 * in-flight marker, in the same transaction, so after a crash exactly one of these holds for a
 * turn: its marker is still set (no reply was recorded: resume it), or its reply is on the ledger
 * (deliver it if not yet delivered). Nothing is regenerated and nothing is sent twice.
 *
 * The inbound side: a platform message is recorded as taken when it starts waiting in a queue (with
 * its backlog row), when its turn starts (in the same transaction as the in-flight marker) or when
 * a chat command acts on it, so a platform's redelivery after a crash is recognised and never
 * starts a second turn. The backlog keeps what waits in each queue, so a restart loses none of it.
 */
import type { InboundRef, MessageEvent } from '../messaging/adapter.js';
import type { QueuedKind } from '../messaging/queue.js';
import type { Platform, SessionSourceFields, TranscriptMessage } from '../vocabulary.js';
import type { StoredPrompt } from './local-store.js';
import type { UsageUpdate } from './session-store.js';

/** Where a reply goes. Always the real ids: redaction never touches routing (CTX-2). */
export interface DeliveryTarget {
  readonly platform: Platform;
  readonly chat_id: string;
  readonly thread_id: string | null;
  /** The platform message id the reply answers, when the adapter can thread replies. */
  readonly reply_to: string | null;
}

export interface Delivery {
  readonly delivery_id: number;
  readonly turn_id: string;
  readonly session_key: string;
  readonly session_id: string;
  readonly target: DeliveryTarget;
  readonly text: string;
  /** Nothing to send (a silence token, an empty answer); born delivered. */
  readonly silent: boolean;
  /** Delivered by startup recovery rather than by the turn that wrote it. */
  readonly recovered: boolean;
  readonly recorded_at: string;
  readonly delivered_at: string | null;
}

export interface ReplyRecord {
  readonly turnId: string;
  readonly sessionKey: string;
  readonly sessionId: string;
  readonly target: DeliveryTarget;
  readonly text: string;
  readonly silent: boolean;
}

export interface MessagingRecoveryReport {
  /** The previous stop was graceful: crash recovery was skipped and orphan markers discarded. */
  readonly cleanShutdown: boolean;
  /** Keys marked resume_pending (restart_interrupted), to be auto-continued once. */
  readonly resumed: readonly string[];
  /** Keys suspended by stuck-loop detection (REC-5). */
  readonly suspended: readonly string[];
  /** Keys whose reply was persisted: the ledger sweep delivers it, the turn is not rerun. */
  readonly settled: readonly string[];
  /** Keys whose interrupted turn was too old to continue: not resumed, STALE_NOTICE owed. */
  readonly stale: readonly string[];
  /** The step record of each resumed key whose turn left one: where that turn goes on (REC-7). */
  readonly steps: Readonly<Record<string, TurnStepRecord>>;
}

/**
 * Where a chat turn stood when the daemon died (REC-7), from its in-flight marker: the turn (its
 * input carries the id as `admission_id`), the tool call marked started whose result is not stored,
 * and the prompt it waited on.
 */
export interface TurnStepRecord {
  readonly turnId: string;
  readonly sessionId: string;
  /** When the turn first started (ISO); a resumed turn keeps it, for the freshness window. */
  readonly startedAt: string;
  readonly toolStarted: string | null;
  readonly prompt: PlatformPrompt | null;
  /**
   * Consecutive restarts that found this key mid-turn, this one included (the REC-5 streak): the
   * resumed execution runs under generation `resumes + 1`, so its prompts refuse older buttons.
   */
  readonly resumes: number;
}

/**
 * A chat turn's open prompt as its marker keeps it: the local record, the execution generation
 * that asked it and, once sent, the chat message that shows it, so a resumed turn can edit that
 * message's buttons away when it asks again under a new generation.
 */
export interface PlatformPrompt extends StoredPrompt {
  readonly execution_generation?: number;
  readonly message_id?: string;
}

/** Start-up recovery's limits: orphan markers are dropped, stale turns are not continued. */
export interface RecoverOptions {
  readonly maxAgeSeconds: number;
  /** `recovery.auto_continue_freshness_s`; absent: no limit. */
  readonly freshnessSeconds?: number;
  /**
   * `recovery.max_resumes`: the consecutive unclean restart that finds a key mid-turn suspends it
   * (REC-5) instead of continuing it. Default STUCK_LOOP_RESTARTS (3).
   */
  readonly stuckAfter?: number;
  readonly now?: Date;
}

/**
 * What became of a taken platform message: waiting on the backlog, its turn started, a chat command
 * acted on it, it answered a clarify question, a newer follow-up replaced it (QUE-1), or /stop,
 * /new or /reset cleared it. `taken` is what rows recorded before outcomes were kept say.
 */
export type InboundOutcome = 'waiting' | 'turn' | 'command' | 'answer' | 'collapsed' | 'dropped' | 'taken';

/** An event waiting in a session key's queue, as the backlog keeps it. */
export interface BacklogItem {
  /** The gateway's id of the waiting event, stable while it waits. */
  readonly itemId: string;
  readonly kind: QueuedKind;
  readonly event: MessageEvent;
  /** Its platform message, recorded as taken (`waiting`) with the row; null when it has none. */
  readonly inbound: InboundRef | null;
}

export interface StoredBacklogItem {
  readonly sessionKey: string;
  readonly itemId: string;
  readonly kind: QueuedKind;
  readonly event: MessageEvent;
}

/** A key's queue as the backlog must mirror it. */
export interface BacklogState {
  /**
   * The item whose turn is starting but has not taken it yet (its row stays, ahead of the rest,
   * until startTurn deletes it), or null.
   */
  readonly starting: string | null;
  /** Everything waiting, in queue order. */
  readonly waiting: readonly BacklogItem[];
  /** Platform messages that left the queue without a turn, and why. */
  readonly settled: readonly { inbound: InboundRef; outcome: 'collapsed' | 'dropped' }[];
}

/**
 * What a turn settles beside its reply (or, with nothing to deliver, beside the drop of its marker),
 * all in one transaction (STO-1): no crash leaves the answer without its ledger row or the other way round.
 */
export interface TurnEnd {
  /** The physical session whose transcript gets `messages`. */
  readonly sessionId: string;
  /** The turn, and who asked for it (`<platform>:<user id>`): its cost row (docs/cost.md). Absent: none. */
  readonly turnId?: string;
  readonly principal?: string;
  /** The turn's last messages: its final answer, or the words an interrupt cut short. */
  readonly messages: readonly TranscriptMessage[];
  /** Added to the key's counters; null adds nothing. */
  readonly usage: UsageUpdate | null;
  /** The turn answered a resume: the key is no longer resume_pending. */
  readonly clearResumePending: boolean;
  /** The turn completed a restart streak's key: the streak ends. */
  readonly endStreak: boolean;
}

/** Taken inbound rows older than this are pruned at start-up: no platform redelivers that late. */
export const INBOUND_RETENTION_SECONDS = 7 * 86_400;

export interface DeliveryLedger {
  /**
   * A turn starts on the key: sets its in-flight marker, records a human message as taken (`turn`)
   * and deletes the event's backlog row (`backlogItem`, when it waited), atomically: after a crash
   * the event is either still waiting or its turn is in flight, never both, never neither. With
   * `input`, the turn's user message is appended to its transcript in the same transaction, so a
   * started turn always has its input stored (the runner's `inputStored`). With `turnId`, the marker
   * names its turn, whose step writes below it then accepts; a new marker has no steps.
   * @throws NotFoundError when no session is on the key.
   */
  startTurn(
    sessionKey: string,
    inbound: InboundRef | null,
    options?: {
      now?: Date;
      backlogItem?: string | null;
      input?: { sessionId: string; message: TranscriptMessage };
      turnId?: string;
    },
  ): Promise<void>;
  /**
   * REC-7: the tool call's execution starts; resolves once that is durable (group-committed), before
   * its process is spawned. A marker of another turn (or none) is left alone.
   */
  markToolStarted(sessionKey: string, turnId: string, callId: string): Promise<void>;
  /** A tool result stored with the end of its started mark and of the prompt it asked, in one commit. */
  recordToolResult(
    sessionKey: string,
    turnId: string,
    sessionId: string,
    messages: readonly TranscriptMessage[],
  ): Promise<void>;
  /** REC-7: the prompt the turn now waits on (null: none), durable before the chat is shown it. */
  recordTurnPrompt(sessionKey: string, turnId: string, prompt: PlatformPrompt | null): Promise<void>;
  /**
   * The chat message that shows the turn's open prompt `promptId` (group-committed). Fenced to the
   * prompt: once another prompt is recorded, or none, nothing changes.
   */
  recordPromptShown(sessionKey: string, turnId: string, promptId: string, messageId: string): Promise<void>;
  /** Records a message a chat command acted on (or answered a question with) as taken. Idempotent. */
  takeInbound(
    inbound: InboundRef,
    sessionKey: string,
    options?: { now?: Date; outcome?: 'command' | 'answer' },
  ): Promise<void>;
  /** Whether the message was taken before: a redelivery, to be dropped. */
  isInboundTaken(inbound: InboundRef): Promise<boolean>;
  /** What became of a taken message; null when it was never taken. */
  inboundOutcome(inbound: InboundRef): Promise<InboundOutcome | null>;
  /**
   * Makes the key's backlog rows mirror its queue, in one transaction: rows of events no longer
   * waiting are deleted (except `starting`), waiting events are written in order and their
   * platform messages recorded as taken (`waiting`), settled messages get their outcome.
   */
  saveBacklog(sessionKey: string, state: BacklogState, options?: { now?: Date }): Promise<void>;
  /**
   * Issue 28: the steers a running turn takes at a step boundary, in one transaction: `messages`
   * (their text, as user messages of the turn) appended to the transcript, each steer's backlog row
   * gone and its platform message taken as `turn`. After a crash a steer is either still waiting
   * (and applied by the resumed turn) or in the transcript, never both.
   */
  applySteers(
    sessionKey: string,
    sessionId: string,
    steers: readonly { readonly itemId: string | null; readonly inbound: InboundRef | null }[],
    messages: readonly TranscriptMessage[],
    options?: { now?: Date },
  ): Promise<void>;
  /** Every waiting event, each key's in queue order: what a new process puts back on its queues. */
  listBacklog(): Promise<StoredBacklogItem[]>;
  /** Records a turn's reply and drops the key's in-flight marker, atomically. Idempotent per turn. */
  recordReply(record: ReplyRecord, options?: { now?: Date }): Promise<Delivery>;
  /**
   * A turn ends in one transaction: `end` (its last messages, usage, resume and streak bookkeeping)
   * and its reply, whose recording drops the key's in-flight marker; with no reply (nothing to
   * deliver: the turn was interrupted) the marker is dropped alone. Either all of it is durable or
   * none of it. Resolves with the recorded reply, or null without one.
   */
  endTurn(
    sessionKey: string,
    end: TurnEnd,
    reply: ReplyRecord | null,
    options?: { now?: Date },
  ): Promise<Delivery | null>;
  /** False when it was already marked (the caller must not count it as a new delivery). */
  markDelivered(deliveryId: number, options?: { now?: Date }): Promise<boolean>;
  /** One obligation as stored now; null when there is no such id. */
  readDelivery(deliveryId: number): Promise<Delivery | null>;
  /** Obligations not yet delivered, oldest first. */
  listUndelivered(): Promise<Delivery[]>;
  /** The end of a graceful stop: the next start skips crash recovery. */
  writeCleanShutdown(options?: { now?: Date }): Promise<void>;
  /**
   * Start-up recovery in one transaction: reads and removes the clean-shutdown marker, settles
   * every in-flight marker (persisted reply → onto the ledger flagged recovered; none → resume
   * pending, with its step record in the report; stuck → suspended), drops all markers and prunes taken inbound rows older than
   * INBOUND_RETENTION_SECONDS.
   */
  recover(options: RecoverOptions): Promise<MessagingRecoveryReport>;
  /** The key finished a turn: it is no longer on a restart streak. */
  endStreak(sessionKey: string): Promise<void>;
}

/** The delivery target of a session's origin, for replies that no inbound message asked for. */
export function targetOfOrigin(origin: SessionSourceFields): DeliveryTarget {
  return { platform: origin.platform, chat_id: origin.chat_id, thread_id: origin.thread_id, reply_to: null };
}
