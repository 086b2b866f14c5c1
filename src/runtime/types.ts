/**
 * The agent runtime's contracts: tools, the prompts a turn may raise (approval, clarify), and the
 * typed event stream of a turn. The runtime knows nothing of sockets or RPC; the gateway drives it.
 */
import type { TokenUsage, TranscriptMessage } from '../domain/vocabulary.js';
import type { ToolProgress } from './tools/progress.js';

/** JSON Schema of a tool's arguments, exactly as the model is shown it. */
export type JsonSchema = {
  type: 'object';
  properties: Record<string, unknown>;
  required?: string[];
} & Record<string, unknown>;

/** Choices a human may give to an approval request (SPEC RUN-3). Edit prompts allow once | deny only. */
export const APPROVAL_CHOICES = ['once', 'session', 'always', 'deny'] as const;
export type ApprovalChoice = (typeof APPROVAL_CHOICES)[number];

/** How an approval request ended. A timeout is never reported as a human denial. */
export type ApprovalOutcome =
  | { kind: 'approved'; choice: 'once' | 'session' | 'always' | 'remembered' | 'yolo' }
  /** `by: 'config'`: refused without asking, by `approvals.mode: deny`. */
  | { kind: 'denied'; by?: 'config' }
  | { kind: 'timeout' }
  | { kind: 'cancelled' };

export interface ApprovalRequest {
  /** What kind of prompt: a shell command, or an edit (edits allow once | deny). */
  kind: 'command' | 'edit';
  /** The command as the tool will run it, in full (viewers see it with secret values masked). */
  command: string;
  /** Why it needs a human, in words a human reads. */
  reason: string;
  /** Where it runs: part of what a `session` or `always` answer remembers. */
  cwd?: string;
  /**
   * What the approval mode decides on (decide.ts). Absent: a human is always asked (a rollback the
   * user started asks even in yolo sessions).
   */
  gate?: { yolo: boolean; flagged: boolean };
}

export interface ClarifyRequest {
  question: string;
  choices?: string[];
  multi_select?: boolean;
}

/** A clarify answer. An empty answer means the user skipped the question. */
export type ClarifyOutcome =
  | { kind: 'answered'; answer: string | string[] }
  | { kind: 'skipped' }
  | { kind: 'timeout' }
  | { kind: 'cancelled' };

/** What a tool gets for one call. */
export interface ToolContext {
  /** The session's frozen working directory. */
  cwd: string;
  /** Aborted on interrupt or turn cancellation: the tool must stop and clean up. */
  signal: AbortSignal;
  /** Logical session id. */
  sessionId: string;
  /** The admission this call belongs to (tools and the demo model may record it). */
  admissionId: string | undefined;
  /** The id of the model's tool call being run (absent outside a turn's tool step, e.g. in a hook). */
  readonly toolCallId?: string | undefined;
  executionGeneration: number;
  /** The session runs without approvals. */
  yolo: boolean;
  /** Asks a human to approve; resolves when answered, timed out or cancelled. */
  requestApproval(request: ApprovalRequest): Promise<ApprovalOutcome>;
  /** Asks the user a question; resolves when answered, skipped, timed out or cancelled. */
  askClarify(request: ClarifyRequest): Promise<ClarifyOutcome>;
  /** Live progress of this call (throttled by the tool), published as `tool.output`. */
  reportProgress?(progress: ToolProgress): void;
  /**
   * REC-7: records durably that this call's side effect starts; resolves once it is durable. A tool
   * that sets `marksOwnStart` calls it itself right before its first side effect (after any
   * approval); for every other tool the runner calls it before `run`. Rejects when the turn no
   * longer owns its admission or the store cannot write: then nothing may run.
   */
  markStarted(): Promise<void>;
}

export interface ToolResult {
  /** What the model is shown as the tool message content. */
  content: string;
  /** The tool failed; the content says why. Fed back to the model, never a crash. */
  isError?: boolean;
  /**
   * The machinery that runs tools failed, not the tool (the safe-mode worker crashed or hung): the
   * result is stored as usual, then the turn settles `failed` with this reason and message instead
   * of asking the model to go on. Never set by a tool's own output.
   */
  failTurn?: { reason: string; message: string };
}

export interface ToolDefinition {
  name: string;
  /** The toolset this tool belongs to (`terminal`, `clarify`, `project`, …). */
  toolset: string;
  description: string;
  parameters: JsonSchema;
  /** The tool may change files in the session's cwd: checkpoints snapshot the tree before it runs. */
  changesFiles?: boolean;
  /**
   * The tool calls context.markStarted itself, right before its side effect (a tool that asks a
   * human first, or has no side effect and never calls it). Otherwise it is marked before `run`.
   */
  marksOwnStart?: boolean;
  /**
   * Called when a turn that offers the tool starts: loads what its first call would otherwise wait
   * for (the terminal's bash grammar) while the model is asked, and not before any turn needs it.
   * It must not throw; a failure is seen again, and reported, by the call that needs it.
   */
  prepare?(): void;
  run(args: Record<string, unknown>, context: ToolContext): Promise<ToolResult>;
}

export type TurnOutcome = 'completed' | 'failed' | 'cancelled' | 'interrupted';

/** The typed event stream of one turn (SPEC LOC-11). Fields are the wire's snake_case. */
export type TurnEvent =
  | { type: 'turn.start'; admission_id: string | undefined; execution_generation: number }
  | {
      /** REC-7: the turn goes on after a crash, at `step`, under a new generation. */
      type: 'turn.resumed';
      admission_id: string | undefined;
      execution_generation: number;
      step: 'model' | 'tool' | 'approval' | 'clarify';
      /** How many times this turn has been resumed, this one included. */
      resumes: number;
      /** The tool call recovery closed with an honest result (`recovery.running_tool: close`). */
      closed_tool_call_id: string | null;
    }
  /** The provider failed in a way worth retrying; the request is sent again after `delay_ms`. */
  | { type: 'model.retry'; attempt: number; delay_ms: number; reason: string }
  | { type: 'text.delta'; text: string }
  | { type: 'reasoning.delta'; text: string }
  /** Issue 28: a steer was applied here, before the model call that follows (its message is stored). */
  | { type: 'steer.applied'; admission_id: string | undefined; steer_id: string; text: string }
  | { type: 'tool.start'; tool_call_id: string; name: string; arguments: string }
  /** A running tool's progress: at most a few a second, the last line and the time so far. */
  | ({ type: 'tool.output'; tool_call_id: string; name: string } & ToolProgress)
  | {
      type: 'tool.complete';
      tool_call_id: string;
      name: string;
      summary: string;
      is_error: boolean;
      duration_ms: number;
    }
  | {
      type: 'approval.request';
      prompt_id: string;
      execution_generation: number;
      kind: 'command' | 'edit';
      /** The full command, secret values masked. */
      command: string;
      reason: string;
      choices: readonly ApprovalChoice[];
      /** What `session` and `always` would approve, stated for the human (commands only). */
      scope?: string;
    }
  | { type: 'approval.settled'; prompt_id: string; outcome: ApprovalOutcome }
  | {
      type: 'clarify.request';
      prompt_id: string;
      execution_generation: number;
      question: string;
      choices: string[] | null;
      multi_select: boolean;
    }
  | { type: 'clarify.settled'; prompt_id: string; outcome: ClarifyOutcome }
  | { type: 'message.stored'; message: TranscriptMessage }
  | {
      type: 'turn.complete';
      outcome: TurnOutcome;
      usage: TokenUsage;
      /** The final assistant text, when the turn completed. */
      final_text: string | null;
      /** For failed turns: a stable reason and a human message (never a stack trace). */
      error: { reason: string; message: string } | null;
    };

/** The turn a tool call or prompt belongs to. */
export interface TurnScope {
  /** Logical session id. */
  sessionId: string;
  admissionId: string | undefined;
  executionGeneration: number;
  /** Aborted when the turn is interrupted or cancelled. */
  signal: AbortSignal;
  /** Publishes a turn event to the session's viewers. */
  emit(event: TurnEvent): void;
  /**
   * REC-7: the next prompt recreates one a crash interrupted: same prompt id, timeout counted from
   * its original request time. Absent: a new prompt.
   */
  resumePrompt?: { prompt_id: string; requested_at: string };
  /** Told who answered a prompt of this turn (`subject@provider`), just before it settles (tracing). */
  answered?: (promptId: string, by: string) => void;
}

/**
 * Where a turn's questions to humans go. The gateway's prompt broker implements it: it numbers each
 * prompt, binds the answer to the exact prompt_id and generation, and applies timeouts and memory.
 */
export interface PromptHost {
  requestApproval(scope: TurnScope, request: ApprovalRequest): Promise<ApprovalOutcome>;
  askClarify(scope: TurnScope, request: ClarifyRequest): Promise<ClarifyOutcome>;
}

/** Where a turn persists its transcript as it goes (the session store implements it). */
export interface TranscriptSink {
  append(sessionId: string, messages: TranscriptMessage[]): void | Promise<void>;
}
