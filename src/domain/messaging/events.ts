/** The messaging gateway's typed lifecycle events: logs, metrics and tests wait on these. */
import type { AdapterStatus } from './adapter.js';
import type { MessagingRecoveryReport, Delivery } from '../ports/delivery-ledger.js';
import type { TurnOutcome } from '../../runtime/types.js';
import type { ResumeStep } from '../session/step-resume.js';
import type { BudgetEvent } from '../budget/guard.js';

/** Which of a chat's writes waits for the store (issue 26 item 5). */
export type StorageOperation = 'session' | 'start' | 'end' | 'reply' | 'delivered';

export interface MessagingEvents extends Record<string, unknown> {
  /** An adapter's status changed (connected, failed, stopped): what `gatehouse status` shows. */
  'adapter:status': AdapterStatus;
  /** An inbound event was accepted (after authorization) for a session key. */
  'inbound:accepted': { session_key: string; text: string; internal: boolean };
  /** An inbound event was refused by the adapter's authorization. */
  'inbound:refused': { platform: string; user_id: string | null };
  /** A platform redelivered a message that was already taken (inbound ledger): dropped. */
  'inbound:duplicate': { platform: string; chat_id: string; message_id: string };
  /** An inbound event arrived during start-up recovery and waits for it. */
  'inbound:deferred': { platform: string };
  'turn:start': { session_key: string; session_id: string; turn_id: string; text: string };
  'turn:complete': {
    session_key: string;
    session_id: string;
    turn_id: string;
    outcome: TurnOutcome;
    final_text: string | null;
  };
  /**
   * REC-7: a turn a restart interrupted goes on at its last durable step (`step`), under a new
   * execution generation; `turn_id` is the interrupted turn's (its stored input carries it). The
   * chat is told too (resumedNotice).
   */
  'turn:resumed': {
    session_key: string;
    session_id: string;
    turn_id: string;
    step: ResumeStep;
    execution_generation: number;
    closed_tool_call_id: string | null;
  };
  /** A turn's model call crossed 80% of a budget limit, or was refused by one (docs/cost.md, "Budgets"). */
  budget: { session_key: string; turn_id: string; event: BudgetEvent };
  /** A promoted event found no running adapter and went back on its queue (QUE-3). */
  'queue:requeued': { session_key: string; platform: string };
  'command:handled': { session_key: string; command: string };
  /** Issue 28: a message sent during a turn (`during_turn: steer`) waits for the turn's next boundary. */
  'steer:queued': { session_key: string; text: string };
  /** …and was applied there, stored as a user message of that turn before its next model call. */
  'steer:applied': { session_key: string; turn_id: string; text: string };
  /** …or came after the turn's last model call: it runs as the next turn's input (the chat is told). */
  'steer:deferred': { session_key: string; count: number };
  'approval:asked': { session_key: string; prompt_id: string };
  'delivery:sent': { delivery: Delivery; recovered: boolean };
  'delivery:failed': { delivery: Delivery; message: string };
  /**
   * Start-up recovery finished: `delivered` owed replies sent, `auto_continued` keys resumed,
   * `requeued` events that waited in a queue when the last process ended put back on it.
   */
  'recovery:done': MessagingRecoveryReport & {
    delivered: number;
    auto_continued: string[];
    requeued: number;
  };
  'gateway:stopped': { clean: boolean };
  /** A session's transcript was replaced (the agent cache drops its copy). */
  'transcript:replaced': {
    session_key: string;
    kind: 'compression' | 'reset' | 'rewind';
    session_id: string;
  };
  'session:compressed': {
    session_key: string;
    reason: string;
    messages_before: number;
    messages_after: number;
    tokens_before: number;
    tokens_after: number;
    /** `summary`, or `dropped`: the oldest exchanges left out, no usable summary. */
    method: 'summary' | 'dropped';
  };
  /**
   * The store refused a chat's write as unavailable (a full disk): the write is tried again after
   * `retry_in_ms` (`attempt` counts from 0), and the turn or delivery waits for it meanwhile.
   */
  'storage:waiting': {
    session_key: string;
    operation: StorageOperation;
    error: string;
    attempt: number;
    retry_in_ms: number;
  };
  /** …and the write went through: the turn or delivery goes on. */
  'storage:back': { session_key: string; operation: StorageOperation };
  /** A compression's summary call failed: the oldest exchanges were dropped instead; retried after the cooldown. */
  'compression:failed': { session_key: string; error: string; retry_after: string };
}
