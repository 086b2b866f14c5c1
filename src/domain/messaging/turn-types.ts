/**
 * The shapes a messaging turn shares with the parts that watch it (its prompts, its clocks, the
 * chat commands, the gateway): what a turn needs, and what the gateway keeps of one while it runs.
 * A leaf, so the turn and its prompt handling can import each other's vocabulary without a circle.
 */
import type { ApprovalPrompt, MessageEvent } from './adapter.js';
import type { MappedPrincipal } from '../auth/chat-members.js';
import type { SessionSource } from '../session/source.js';
import type { AuditEntry } from '../ports/access-store.js';
import type { Deliverer } from './delivery.js';
import type { MessagingEvents } from './events.js';
import type { PlatformCompressionDeps } from './compression.js';
import type { TypingClock } from './turn-clocks.js';
import type { AgentCache } from '../agents/agent-cache.js';
import type { TypedEmitter } from '../events/typed-emitter.js';
import type { HomeChannel } from '../session/context.js';
import type { SessionKeyOptions } from '../session/key.js';
import type { RunningToolPolicy } from '../session/step-resume.js';
import type { Platform, TranscriptMessage } from '../vocabulary.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { ToolDefinition } from '../../runtime/types.js';
import type { TurnTracer } from '../../runtime/tracing.js';
import type { DeliveryLedger, TurnStepRecord } from '../ports/delivery-ledger.js';
import type { SessionStore } from '../ports/session-store.js';
import type { Semaphore } from '../concurrency/semaphore.js';
import type { BudgetGuard } from '../budget/guard.js';
import type { ModelPrice } from '../../runtime/model/pricing.js';

export interface TurnDeps {
  readonly store: SessionStore;
  readonly ledger: DeliveryLedger;
  readonly deliverer: Deliverer;
  readonly model: ChatModel;
  readonly modelName: string | undefined;
  readonly tools: ToolDefinition[];
  readonly prompts: PromptBroker;
  /** The working folder of a chat's tools. */
  cwdFor(platform: string, chatId: string): string;
  readonly yolo: boolean;
  /** The principal the sender of `source` is mapped to (`platforms.<name>.members`), or null. */
  principalFor(source: SessionSource): MappedPrincipal | null;
  /**
   * Issue 28: applies the steers waiting on the key's lane to the running turn, durably (one
   * commit); the messages `build` made of them, in order, or none.
   */
  takeSteers(
    sessionKey: string,
    sessionId: string,
    turnId: string,
    build: (event: MessageEvent, steerId: string) => TranscriptMessage,
  ): Promise<TranscriptMessage[]>;
  /** Appends an audit row (issue 30); a failure is the audit's own, never the turn's. */
  audit?(entry: AuditEntry): void;
  readonly maxTurns: number;
  /** `limits.turn_timeout_s` in ms, from the moment the turn took its event; null: no limit. */
  readonly turnTimeoutMs: number | null;
  readonly baseSystemPrompt: string;
  /** The session-key options of a platform (KEY-1), and whether its prompt ids are hashed (CTX-2). */
  keyOptionsFor(platform: string): SessionKeyOptions;
  redactPiiFor(platform: string): boolean;
  readonly homeChannels: readonly HomeChannel[];
  readonly typing: TypingClock;
  readonly events: TypedEmitter<MessagingEvents>;
  /** Keys on a restart streak (resumed at start-up); a completed turn ends it. */
  readonly streaking: Set<string>;
  /** The turn took its event's backlog row (startTurn deleted it). */
  backlogTaken(sessionKey: string, itemId: string): void;
  /** True once the gateway halted (its bots' leases are gone): nothing is sent to a chat directly. */
  halted?: () => boolean;
  connectedPlatforms(): Platform[];
  piiSafePlatforms(): string[];
  /** The lanes' live agents between turns (AGC-1), keyed by session key. */
  readonly agents: AgentCache;
  /** The model's context budget and compression; without it turns never compress. */
  readonly compression?: PlatformCompressionDeps;
  /** REC-7: the step records start-up recovery found, by key, until the key's auto-continue takes one. */
  readonly resumePoints: Map<string, TurnStepRecord>;
  /** `recovery.running_tool`: what a resumed turn does with the tool that was running at the crash. */
  readonly runningTool: RunningToolPolicy;
  /** Every turn event's type, for the daemon's test-only fault points (crash tests). */
  observe?(eventType: string): void;
  /** Turn traces (runtime/tracing.ts); absent: none. */
  readonly tracer?: TurnTracer;
  /** The daemon's limit on turns running at once, shared with local sessions. */
  readonly permits?: Semaphore;
  /** The budget guard every model call passes (docs/cost.md, "Budgets"), and the price of the model. */
  readonly budget?: { readonly guard: BudgetGuard; readonly price: ModelPrice | null };
}

/**
 * What the gateway keeps of a running turn, for /stop, /status and /approve. It exists from the
 * moment the queue starts the event (before the session is even looked up), so a /stop or /new
 * that arrives meanwhile finds it and aborts it.
 */
export interface RunningTurn {
  readonly turnId: string;
  /** Null until the turn has looked up its session. */
  sessionId: string | null;
  readonly abort: AbortController;
  /** The backlog row of the event (it waited before it started), until the turn takes it. */
  backlogItem: string | null;
  /** The turn took its event (in-flight marker set): from here on it is resumed, not rerun. */
  started: boolean;
  /** The approval prompt waiting for this chat, bound to its exact id and generation. */
  approval: PendingApproval | null;
  clarify: { prompt_id: string; execution_generation: number } | null;
}

/** An approval waiting in a chat; `shown`: the message carrying its buttons, once sent. */
export interface PendingApproval extends ApprovalPrompt {
  shown: Promise<string | null> | null;
}
