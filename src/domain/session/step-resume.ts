/**
 * Step resume (SPEC REC-7), one module for both session engines: a local session's turn job
 * (domain/local/turn-job.ts) and a chat platform's turn (domain/messaging/turn.ts) decide where an
 * interrupted turn stood, and go on from there, through the same functions.
 *
 * A turn is a sequence of steps. Model calls have no side effect beyond their cost; tool executions
 * do. Their boundaries are durable: the claim stores the input, an assistant message with tool calls
 * is stored before any of them runs, a tool is marked started (`tool_started`) before its process is
 * spawned, and its result is stored with the mark cleared in one commit. So after a crash:
 *
 *   tool_started set                     → the tool was running: its effect is unknown
 *   a stored call without a result       → resume at that call (not started yet; a prompt it was
 *                                          waiting on is recreated with the same id)
 *   otherwise (input or results stored)  → resume with a model call on exactly the stored history
 *
 * and the recovery decision, per orphaned admission:
 *
 *   running tool, policy `unknown`       → unknown (tool_running)
 *   the max_resumes-th consecutive crash → unknown (max_resumes)
 *   started longer ago than freshness    → unknown (stale)
 *   otherwise                            → resume under a new generation (turn.resumed)
 *
 * The decision (decideRecovery, turnBoundary) is pure: no store, no clock of its own. resumeAt turns
 * it into the runner's `resume`, closing the running call with an honest result when the policy
 * says so; recordingPrompts records every prompt a turn opens and recreates the one a crash
 * interrupted; stepResumeOf reads a chat platform's step record (the delivery ledger's) into all of
 * that.
 */
import type { PromptHost, TurnScope } from '../../runtime/types.js';
import type { DeliveryLedger, TurnStepRecord } from '../ports/delivery-ledger.js';
import type { StoredPrompt } from '../ports/local-store.js';
import type { AgentLease } from '../agents/agent-cache.js';
import type { ToolCall, TranscriptMessage } from '../vocabulary.js';

/** What recovery does with a turn whose tool was running at the crash (`recovery.running_tool`). */
export type RunningToolPolicy = 'unknown' | 'close';
export const RUNNING_TOOL_POLICIES: readonly RunningToolPolicy[] = ['unknown', 'close'];

export interface RecoverySettings {
  runningTool: RunningToolPolicy;
  /** The crash count of one turn that makes it `unknown` (1: every crash, as before step resume). */
  maxResumes: number;
  /** A turn resumes by itself only within this many seconds of when it started. */
  freshnessS: number;
}

export const RECOVERY_DEFAULTS: RecoverySettings = {
  runningTool: 'unknown',
  maxResumes: 3,
  freshnessS: 3600,
};

/** What the store knows of an orphaned turn. */
export interface OrphanFacts {
  started_at: string | null;
  /** Resumes so far; this crash is crash number `resumes + 1`. */
  resumes: number;
  tool_started: string | null;
}

export type UnknownReason = 'tool_running' | 'max_resumes' | 'stale';

export type RecoveryDecision =
  { kind: 'resume' } | { kind: 'unknown'; reason: UnknownReason; detail: string };

export function decideRecovery(
  facts: OrphanFacts,
  settings: RecoverySettings,
  now: number,
): RecoveryDecision {
  if (facts.tool_started !== null && settings.runningTool === 'unknown') {
    return {
      kind: 'unknown',
      reason: 'tool_running',
      detail: 'tool_running: the daemon stopped while a tool ran; its effect is unknown',
    };
  }
  const crashes = facts.resumes + 1;
  if (crashes >= settings.maxResumes) {
    return {
      kind: 'unknown',
      reason: 'max_resumes',
      detail: `max_resumes: the daemon stopped ${crashes} times in a row during this turn (recovery.max_resumes ${settings.maxResumes})`,
    };
  }
  const started = facts.started_at === null ? now : Date.parse(facts.started_at);
  if (now - started > settings.freshnessS * 1000) {
    return {
      kind: 'unknown',
      reason: 'stale',
      detail: `stale: the turn started more than ${settings.freshnessS} s ago (recovery.auto_continue_freshness_s)`,
    };
  }
  return { kind: 'resume' };
}

/**
 * Whether a fresh turn's claim may be answered before its commit is flushed (docs/decisions.md, "The
 * claim's commit"). A power loss before the turn's next durable commit then loses the claim, and the
 * admission runs again as if never claimed: its model called again, as a resume would call it. So
 * only while the settings would resume a turn killed right after its claim (its first crash, fresh);
 * with `max_resumes: 1` or no freshness every started turn must stay started, so every claim is durable.
 */
export function claimMayBeLazy(settings: RecoverySettings): boolean {
  return settings.maxResumes > 1 && settings.freshnessS > 0;
}

/** Where a resumed turn goes on. `closed`: the running tool call recovery closes with an honest result. */
export type TurnBoundary =
  { kind: 'model' } | { kind: 'tools'; calls: ToolCall[]; closed: ToolCall | null } | { kind: 'lost' };

/** The step a resumed turn starts with, for `turn.resumed`. */
export type ResumeStep = 'model' | 'tool' | 'approval' | 'clarify';

/**
 * The boundary of a turn from its stored messages after its input (`turn`) and its started mark.
 * `lost`: the stored messages do not match the mark (a call marked started is not among the open
 * ones), which the runner never writes; recovery then treats the turn as unknown.
 */
export function turnBoundary(turn: readonly TranscriptMessage[], toolStarted: string | null): TurnBoundary {
  const answered = new Set(
    turn.flatMap((m) => (m.role === 'tool' && m.tool_call_id ? [m.tool_call_id] : [])),
  );
  const last = [...turn].reverse().find((m) => m.role === 'assistant');
  const open = (last?.tool_calls ?? []).filter((c) => !answered.has(c.id));
  if (open.length === 0) return toolStarted === null ? { kind: 'model' } : { kind: 'lost' };
  if (toolStarted === null) return { kind: 'tools', calls: open, closed: null };
  if (open[0]!.id !== toolStarted) return { kind: 'lost' };
  return { kind: 'tools', calls: open.slice(1), closed: open[0]! };
}

/** The honest result of a tool call that was running when the daemon died (`running_tool: close`). */
export const RESTARTED_WHILE_RUNNING =
  '[gateway restarted] The gateway restarted while this tool call ran, so its result was lost. ' +
  'Its effect is unknown: it may have done all, part or none of its work. Check the current state ' +
  'before relying on it or running it again.';

/** The messages of the turn of `admissionId` after its input, and the history before the input. */
export function splitAtInput(
  messages: readonly TranscriptMessage[],
  admissionId: string,
): { before: number; turn: TranscriptMessage[] } | null {
  const at = messages.findIndex((m) => m.role === 'user' && m.admission_id === admissionId);
  if (at < 0) return null;
  return { before: at, turn: messages.slice(at + 1) };
}

/** What the store kept of an interrupted turn's steps. */
export interface StepRecord {
  readonly turnId: string;
  readonly toolStarted: string | null;
  readonly prompt: StoredPrompt | null;
}

export type BoundaryCalls = Extract<ReturnType<typeof turnBoundary>, { kind: 'tools' }>['calls'];

export interface ResumePoint {
  step: ResumeStep;
  /** What the turn stored after its input, with the closed call's result when there is one. */
  turn: TranscriptMessage[];
  /** The stored tool calls still to run, first. */
  calls: BoundaryCalls;
  closed: string | null;
}

/**
 * Where a resumed turn goes on, with the running tool call closed by an honest result first
 * (`storeResult`) when the policy says so. Null: the stored turn and its step record disagree, or
 * a tool was running and the policy is `unknown`.
 */
export async function resumeAt(
  record: StepRecord,
  stored: readonly TranscriptMessage[],
  runningTool: RunningToolPolicy,
  storeResult: (messages: TranscriptMessage[]) => Promise<void>,
): Promise<ResumePoint | null> {
  const boundary = turnBoundary(stored, record.toolStarted);
  if (boundary.kind === 'lost') return null;
  if (boundary.kind === 'model') return { step: 'model', turn: [...stored], calls: [], closed: null };
  const turn = [...stored];
  if (boundary.closed) {
    if (runningTool !== 'close') return null;
    const result: TranscriptMessage = {
      role: 'tool',
      tool_call_id: boundary.closed.id,
      name: boundary.closed.function.name,
      content: RESTARTED_WHILE_RUNNING,
      tool_outcome: { is_error: true },
      admission_id: record.turnId,
    };
    await storeResult([result]);
    turn.push(result);
  }
  const prompt = record.prompt;
  const first = boundary.calls[0];
  const step: ResumeStep =
    first === undefined ? 'model' : prompt?.tool_call_id === first.id ? prompt.type : 'tool';
  return { step, turn, calls: boundary.calls, closed: boundary.closed?.id ?? null };
}

/**
 * The prompt host of one turn: every prompt it opens is recorded durably (`record`) before viewers
 * are shown it, and the prompt a crash interrupted is recreated with its id and original time for
 * the same tool call.
 */
export function recordingPrompts(
  host: PromptHost,
  record: (prompt: StoredPrompt) => Promise<unknown>,
  interrupted: StoredPrompt | null,
  currentCall: () => string | null,
): PromptHost {
  let pending = interrupted;
  const scoped = (scope: TurnScope, type: StoredPrompt['type']): TurnScope => {
    const callId = currentCall();
    const reuse =
      pending !== null && pending.type === type && pending.tool_call_id === callId ? pending : null;
    pending = null;
    const requestType = type === 'approval' ? 'approval.request' : 'clarify.request';
    return {
      ...scope,
      ...(reuse ? { resumePrompt: { prompt_id: reuse.prompt_id, requested_at: reuse.requested_at } } : {}),
      emit: (event) => {
        if (event.type !== requestType || callId === null || !('prompt_id' in event))
          return scope.emit(event);
        const stored: StoredPrompt = {
          prompt_id: event.prompt_id,
          type,
          tool_call_id: callId,
          requested_at: reuse?.requested_at ?? new Date().toISOString(),
        };
        // Shown once durable; a failed record still shows it (it is then not recreated after a crash).
        record(stored).then(
          () => scope.emit(event),
          () => scope.emit(event),
        );
      },
    };
  };
  return {
    requestApproval: (scope, request) => host.requestApproval(scoped(scope, 'approval'), request),
    askClarify: (scope, request) => host.askClarify(scoped(scope, 'clarify'), request),
  };
}

/**
 * What a chat turn's step resume reads: the auto-continue (REC-4) of a key whose interrupted turn
 * left a step record goes on as that turn, at its boundary, by the same rule as a local turn.
 */
export interface StepResumeDeps {
  readonly ledger: DeliveryLedger;
  /** The step records start-up recovery found, by key; taking one removes it. */
  readonly resumePoints: Map<string, TurnStepRecord>;
  readonly runningTool: RunningToolPolicy;
}

/** An interrupted turn going on at its step boundary (REC-7). */
export interface StepResume {
  readonly record: TurnStepRecord;
  /** The turn's stored input, and where it sits in the transcript (the history ends before it). */
  readonly input: TranscriptMessage;
  readonly before: number;
  readonly point: ResumePoint;
  /** The execution generation the resumed turn runs under: its prompts refuse older buttons. */
  readonly generation: number;
}

/**
 * The step resume an auto-continue (REC-4) stands for: its key's step record names a turn of this
 * session, which goes on at its boundary — a model call on exactly the stored history (claimed,
 * the call in flight or streaming, or every tool result stored), a stored tool call not yet
 * started, a prompt it waited on, or a running call that `recovery.running_tool: close` closes
 * with an honest result. Null when there is no record (a drain's resume, a crash between recovery
 * and this turn's start), the record and the transcript disagree, or a tool was running under
 * `unknown`: the auto-continue is then a new turn with the restart note, as before step resume.
 * The crash count (recovery.max_resumes) and the freshness window were applied by start-up
 * recovery (planRecovery), so no limit is applied twice here.
 */
export async function stepResumeOf(
  deps: StepResumeDeps,
  sessionKey: string,
  sessionId: string,
  agent: AgentLease,
): Promise<StepResume | null> {
  const record = deps.resumePoints.get(sessionKey);
  deps.resumePoints.delete(sessionKey);
  if (record === undefined || record.sessionId !== sessionId) return null;
  const split = splitAtInput(agent.messages, record.turnId);
  if (split === null || turnBoundary(split.turn, record.toolStarted).kind === 'lost') return null;
  const facts = { started_at: record.startedAt, resumes: 0, tool_started: record.toolStarted };
  const settings = { runningTool: deps.runningTool, maxResumes: Infinity, freshnessS: Infinity };
  if (decideRecovery(facts, settings, Date.now()).kind !== 'resume') return null;
  const point = await resumeAt(record, split.turn, deps.runningTool, (messages) =>
    deps.ledger.recordToolResult(sessionKey, record.turnId, sessionId, messages),
  );
  if (point === null) return null;
  const input = agent.messages[split.before]!;
  return { record, input, before: split.before, point, generation: record.resumes + 1 };
}
