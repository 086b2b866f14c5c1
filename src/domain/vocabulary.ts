/**
 * Gatehouse vocabulary: the words every other module uses, and the records they name.
 *
 * session        One conversation. Identified by a *logical id* that never changes for clients.
 * logical id     The stable id clients create, resume and submit to (`session_id` on the wire).
 * physical id    The id of the transcript currently backing a session (`stored_session_id` at
 *                creation). Compression and reset may rotate it; the logical id stays.
 * lineage        The chain of physical transcripts behind a logical id, one `compression` or
 *                `reset` step each; every child row names its parent (domain/local/lineage.ts).
 * session key    The deterministic routing key of a conversation lane
 *                (`agent:main:{platform}:{chat_type}[:…]`). The routing map sends a key to an entry.
 * entry          The durable record of the session currently on a key (SessionEntry).
 * source         Where a message came from (SessionSource): platform, chat, user, thread.
 * transcript     The ordered messages of one physical session, as the model sees them.
 * admission      One accepted input, durably recorded before it is acknowledged.
 * turn           One execution of the agent for one admission: model calls and tool calls until a
 *                final answer, a failure, a cancel or an interrupt.
 * viewer         One attached client connection that receives a session's events.
 * principal      An authenticated identity: subject + provider + profile, stamped by the server.
 * profile        One configured agent home: its config, its store and its toolsets.
 * epoch          The authority epoch: a number opened durably by each daemon start. Every claim and
 *                settlement is fenced by it, so a stale process can never settle a turn.
 * cursor         A viewer's place in a session's events: (epoch, seq). On one daemon the epoch is
 *                the daemon's; in a cluster it is the session's event stream's (docs/cluster.md).
 * event stream   Cluster mode: a session's events numbered once in the shared database, so every
 *                instance shows an event under the same cursor.
 * generation     The execution generation: bumped each time an admission is claimed for execution.
 *                Approvals, interrupts and settlements name the generation they belong to.
 * receipt        A durable record that proves an operation happened (creation receipt, admission
 *                receipt) and lets a retry return the same answer.
 *
 * Records that cross the wire or reach the disk keep the seeds' snake_case field names, so their
 * JSON form is the identity mapping. Functions and classes use camelCase.
 */

/** Chat platforms known to the core. Plugins may use any other non-empty string; it round-trips. */
export const KNOWN_PLATFORMS = [
  'local',
  'telegram',
  'discord',
  'slack',
  'signal',
  'whatsapp',
  'matrix',
  'cli',
  'tui',
  'desktop',
  'acp',
  'api',
] as const;
export type KnownPlatform = (typeof KNOWN_PLATFORMS)[number];
/** A platform name: one of KNOWN_PLATFORMS, or a plugin's own name. */
export type Platform = KnownPlatform | (string & {});

export const CHAT_TYPES = ['dm', 'group', 'channel', 'thread'] as const;
export type ChatType = (typeof CHAT_TYPES)[number];

/** The fields of a SessionSource (SPEC SRC-1), in their JSON form. */
export interface SessionSourceFields {
  readonly platform: Platform;
  readonly chat_id: string;
  readonly chat_name: string | null;
  readonly chat_type: ChatType;
  readonly user_id: string | null;
  readonly user_name: string | null;
  readonly thread_id: string | null;
  readonly chat_topic: string | null;
  readonly user_id_alt: string | null;
  readonly chat_id_alt: string | null;
  readonly is_bot: boolean;
  readonly guild_id: string | null;
  readonly parent_chat_id: string | null;
  readonly message_id: string | null;
  readonly role_authorized: boolean;
}

/** Why a session was marked to resume on its next access (seed 002 §2). */
export type ResumeReason = 'restart_timeout' | 'shutdown_timeout' | 'restart_interrupted';

/** The durable record of the session currently on a session key (SPEC ENT-1). Times are ISO-8601 UTC. */
export interface SessionEntry {
  session_key: string;
  /** Physical session id, `YYYYMMDD_HHMMSS_<8hex>`. */
  session_id: string;
  created_at: string;
  updated_at: string;
  origin: SessionSourceFields | null;
  display_name: string | null;
  platform: Platform | null;
  chat_type: ChatType;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  total_tokens: number;
  last_prompt_tokens: number;
  estimated_cost_usd: number;
  cost_status: string;
  was_auto_reset: boolean;
  auto_reset_reason: string | null;
  reset_had_activity: boolean;
  is_fresh_reset: boolean;
  expiry_finalized: boolean;
  suspended: boolean;
  resume_pending: boolean;
  resume_reason: ResumeReason | null;
  last_resume_marked_at: string | null;
}

/**
 * Where a cost figure comes from (docs/cost.md): the provider's own (`reported`), tokens × a price
 * (`estimated`), or neither (`unknown`: some call had no price; the dollars count only the others).
 */
export const COST_STATUSES = ['reported', 'estimated', 'unknown'] as const;
export type CostStatus = (typeof COST_STATUSES)[number];

/** Token usage of one model call or one turn, added into a SessionEntry's counters. */
export interface TokenUsage {
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cache_write_tokens: number;
  total_tokens: number;
  /** The calls' cost in US dollars, as far as known; absent before it is priced (docs/cost.md). */
  cost_usd?: number;
  cost_status?: CostStatus;
  /** The provider and model label the calls were priced under (the first call's). */
  provider?: string;
  model?: string;
}

/** The least certain of two cost statuses: unknown over estimated over reported. */
export function combineCostStatus(
  a: CostStatus | undefined,
  b: CostStatus | undefined,
): CostStatus | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return COST_STATUSES[Math.max(COST_STATUSES.indexOf(a), COST_STATUSES.indexOf(b))];
}

/** One tool call requested by the model, as the OpenAI chat-completions format carries it. */
export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type MessageRole = 'system' | 'user' | 'assistant' | 'tool';

/**
 * One transcript message, in the shape the model is sent (OpenAI chat-completions), plus the
 * fields Gatehouse keeps beside it. `reasoning` is never sent back to the model.
 */
export interface TranscriptMessage {
  role: MessageRole;
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  name?: string;
  reasoning?: string;
  /** The admission this message belongs to, when it was produced by a turn. */
  admission_id?: string;
  /** Who wrote a user message in a shared session (rendered as `[name]` at run time, KEY-3). */
  sender_name?: string;
  /** ISO-8601 UTC time the message was stored. Filled by the store when absent. */
  timestamp?: string;
  /**
   * How a tool call went, on its tool message, for clients showing history as they showed it live
   * (never sent to the model): an error, and what a human answered when it asked for approval.
   */
  tool_outcome?: ToolOutcome;
  /** The turn was interrupted (or cancelled) here: on its last stored message. */
  interrupted?: boolean;
  /** A steer applied in this turn at a step boundary (issue 28): the steer's own admission id. */
  steer_id?: string;
}

export interface ToolOutcome {
  is_error: boolean;
  /** The approval asked for this call: the choice it was allowed with, or why it was not. */
  approval?: 'once' | 'session' | 'always' | 'remembered' | 'yolo' | 'denied' | 'timeout' | 'cancelled';
}
