/**
 * What the local sessions' engine is built from (service.ts): its stores, the prompt broker, the
 * launch policy, the turn runner, and the optional parts a configuration adds (budgets,
 * compression, checkpoints, cluster mode, tracing, sharing, member limits). The daemon's composition
 * root (daemon/services/gateway.ts) fills it in; tests fill in what they need.
 */
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { CompressionReason, CompressOutcome } from '../../runtime/context/budget.js';
import type { CheckpointStore } from '../../runtime/checkpoints/store.js';
import type { SessionMcpServers } from '../../runtime/mcp/pool.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { TurnTracer } from '../../runtime/tracing.js';
import type { ChatMembers } from '../auth/chat-members.js';
import type { MemberLimits } from '../auth/member-limits.js';
import type { BudgetGuard } from '../budget/guard.js';
import type { ControlRelay } from '../cluster/relay.js';
import type { Semaphore } from '../concurrency/semaphore.js';
import type { AccessStore } from '../ports/access-store.js';
import type { SharedEventStore, StreamSignals } from '../ports/event-stream.js';
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import type { RecoverySettings } from '../session/step-resume.js';
import type { LocalCompressionDeps } from './compression.js';
import type { LaunchDefaults, LaunchLookups } from './launch-policy.js';
import type { McpValueLimits } from './mcp-values.js';
import type { RequestShape } from './reads.js';
import type { SessionOwnership, TurnJob, TurnJobResult } from './scheduler.js';
import type { PublicEvent } from './hub.js';
import type { CreationReceipt } from './receipt.js';

/** What a turn runner asks of the service that runs its turns (turn-job.ts's callbacks). */
export interface TurnRunnerHost {
  /** The session's receipt for a turn about to run, validated in this epoch first if it was not yet. */
  receiptForTurn(logicalId: string): Promise<CreationReceipt | null>;
  /** The receipt if this epoch validated it already. */
  validatedReceipt(logicalId: string): CreationReceipt | null;
  apiKeyOf(logicalId: string): string | undefined;
  /** The session's own MCP servers with the values held in memory put back. */
  mcpServersOf(logicalId: string, servers: SessionMcpServers): SessionMcpServers;
  publish(logicalId: string, event: PublicEvent): void;
  agentStarted(logicalId: string): void;
  /** Compresses a session whose turn slot the caller holds. */
  compressInSlot(
    logicalId: string,
    reason: CompressionReason,
    signal?: AbortSignal,
    model?: ChatModel,
  ): Promise<CompressOutcome>;
}

export interface LocalSessionsOptions {
  /** The budget guard (docs/cost.md, "Budgets"), for session.budget and its controls. */
  budget?: BudgetGuard;
  profile: string;
  epoch: number;
  store: LocalSessionStore;
  sessions: SessionStore;
  prompts: PromptBroker;
  launchDefaults: LaunchDefaults;
  launchLookups: LaunchLookups;
  /** Builds the turn runner once the service's callbacks exist (see turn-job.ts). */
  turnRunner: (service: TurnRunnerHost) => (job: TurnJob) => Promise<TurnJobResult>;
  /** False while the daemon drains: new input is refused with runtime_draining. */
  accepting: () => boolean;
  maxConcurrentTurns: number;
  /** The daemon's turn limit shared with chat-platform turns; absent: one of maxConcurrentTurns. */
  turnPermits?: Semaphore;
  onError: (error: unknown, context: string) => void;
  /** Named test-only fault points; inert in production. */
  fault?: (point: string) => void;
  replayCapacity?: number;
  /** Byte cap of each session's replay buffer (`events.replay_max_bytes`). */
  replayMaxBytes?: number;
  coalesceMs?: number;
  /**
   * The sessions whose agent is live in memory (the agent cache, keyed by logical id for local
   * sessions). Absent: an agent counts as live once it started in this epoch.
   */
  agents?: { has(logicalId: string): boolean; keys(): Iterable<string> };
  /** The summary model and context settings of compression (LIN-1); without it nothing compresses. */
  compression?: Pick<LocalCompressionDeps, 'model' | 'settings'>;
  /**
   * What a session's next request holds besides its transcript, for session.context: the tool
   * definitions of its toolsets and the platforms its system prompt names. Absent: no tools, only
   * `local`.
   */
  requestShape?: RequestShape;
  /** Where checkpoints are kept (LOC-5); without it checkpoint.list and checkpoint.restore refuse. */
  checkpoints?: CheckpointStore;
  /** REC-7 step resume (`recovery.*`); defaults: RECOVERY_DEFAULTS. */
  recovery?: RecoverySettings;
  /** `limits.turn_timeout_s` in ms; absent: no limit. */
  turnTimeoutMs?: number;
  /**
   * Cluster mode (`cluster.enabled`, docs/cluster.md): events go through the shared stream, so
   * viewers on every instance see them under one numbering. Absent: events stay in this process.
   */
  cluster?: { store: SharedEventStore; signals: StreamSignals };
  /** In a cluster (SCL-1): which sessions this instance may run; absent: all of them. */
  ownership?: SessionOwnership;
  /** Turn traces (runtime/tracing.ts); absent: none. */
  tracer?: TurnTracer;
  /** Session shares (issue 30); absent: nothing is shared with members, and sharing is refused. */
  shares?: AccessStore;
  /** What members may ask for at creation (issue 30); absent: members are refused nothing more. */
  memberLimits?: MemberLimits;
  /** `platforms.<name>.members` (issue 30): whose chat conversations a member may list and read. */
  chatMembers?: ChatMembers;
  /**
   * In a cluster (issue 14): carries prompt answers and interrupts to the instance running the
   * session's turn. Absent: they reach the turns of this process only.
   */
  relay?: ControlRelay;
  /** Bytes of own MCP server values held per session and in all (`limits.mcp_values_*`). */
  mcpValueLimits?: McpValueLimits;
}
