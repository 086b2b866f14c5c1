/**
 * Step resume (REC-7) for a chat turn: the auto-continue (REC-4) of a key whose interrupted turn
 * left a step record goes on as that turn, at its boundary, when the local rule says so. The
 * decision is the local sessions' (domain/local/turn-resume.ts, resume-steps.ts); this only reads
 * the platform's records into it.
 */
import type { AgentLease } from '../../domain/agents/agent-cache.js';
import { resumeAt, type ResumePoint } from '../../domain/local/resume-steps.js';
import {
  decideRecovery,
  splitAtInput,
  turnBoundary,
  type RunningToolPolicy,
} from '../../domain/local/turn-resume.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type { DeliveryLedger, TurnStepRecord } from '../../domain/ports/delivery-ledger.js';

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
