/**
 * Step resume (SPEC REC-7) applied to one turn, whoever runs it: a local session's turn job and a
 * chat platform's turn share it. turn-resume.ts decides where the turn stood; this turns the
 * decision into the runner's `resume` (closing the running call with an honest result when the
 * policy says so) and records every prompt the turn opens, recreating the one a crash interrupted.
 */
import type { PromptHost, TurnScope } from '../../runtime/types.js';
import type { StoredPrompt } from '../ports/local-store.js';
import type { TranscriptMessage } from '../vocabulary.js';
import {
  RESTARTED_WHILE_RUNNING,
  turnBoundary,
  type ResumeStep,
  type RunningToolPolicy,
} from './turn-resume.js';

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
