/**
 * Step resume (SPEC REC-7): where a turn stood when the daemon died, and what recovery does about
 * it. Pure: no store, no clock of its own.
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
 */
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
