/**
 * Runs one claimed admission of a local session through the agent runtime: the frozen policy from
 * the validated receipt, the stored history (with any tool call a crash left open closed first), the
 * session's toolsets, and its model — then reports how the turn ended so the scheduler can settle it.
 *
 * The agent is created lazily here, at the first turn (LOC-1): nothing before this touches a model.
 */
import { runTurn, type TurnResult } from '../../runtime/runner.js';
import { closeDanglingToolCalls } from '../../runtime/transcript-repair.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type {
  CompressionReason,
  CompressOutcome,
  ContextSettings,
  TurnContext,
} from '../../runtime/context/budget.js';
import type { PromptHost, ToolDefinition, TurnEvent } from '../../runtime/types.js';
import type { SessionStore } from '../../storage/session-store.js';
import type { TranscriptMessage } from '../vocabulary.js';
import type { LaunchPolicy } from './launch-policy.js';
import type { CreationReceipt } from './receipt.js';
import type { TurnJob, TurnJobResult } from './scheduler.js';

export interface TurnJobDeps {
  sessions: SessionStore;
  prompts: PromptHost;
  /** The tools of a session's toolsets (already validated at creation). */
  tools(toolsets: readonly string[]): ToolDefinition[];
  /** The model client for a policy; `apiKey` is the creator's in-memory key, when one was given. */
  model(policy: LaunchPolicy, apiKey: string | undefined): ChatModel;
  /** The receipt validated for this epoch, or null when the session is paused. */
  receipt(logicalId: string): CreationReceipt | null;
  apiKey(logicalId: string): string | undefined;
  publish(logicalId: string, event: TurnEvent | { type: string; [field: string]: unknown }): void;
  /** Called once a session's agent exists in this process (lazy-agent status for session.info). */
  agentStarted(logicalId: string): void;
  /** Named test-only fault points (crash tests); inert in production. */
  fault(point: string): void;
  /** The model's context budget for a policy; without it turns never compress. */
  contextSettings?: (policy: LaunchPolicy) => ContextSettings;
  /** Compresses the session in the turn's slot (compression.ts). */
  compress?: (logicalId: string, reason: CompressionReason, signal: AbortSignal) => Promise<CompressOutcome>;
}

/** The frozen system prompt: byte-identical on every turn of a session (prompt-cache friendly). */
export function systemPromptFor(receipt: CreationReceipt): string {
  const policy = receipt.policy;
  const parts = [
    'You are an agent running inside Gatehouse, a session gateway. Use the tools you are given when they help.',
    [
      '## Current Session Context',
      '',
      `Source: local ${policy.source} session (platform ${policy.platform})`,
      `Working directory: ${policy.cwd}`,
      'Connected platforms: local',
    ].join('\n'),
  ];
  if (policy.coding_context === 'focus') {
    parts.push(
      'The working directory is a code workspace: focus on the code, and keep changes minimal and tested.',
    );
  }
  if (policy.skills_prompt) parts.push(policy.skills_prompt);
  return parts.join('\n\n');
}

export function makeTurnJobRunner(deps: TurnJobDeps): (job: TurnJob) => Promise<TurnJobResult> {
  return async (job) => {
    const logicalId = job.session.logical_id;
    const receipt = deps.receipt(logicalId);
    if (!receipt)
      return { outcome: 'failed', detail: 'session_paused: the creation receipt did not validate' };
    const policy = receipt.policy;
    const apiKey = deps.apiKey(logicalId);
    const publish = (event: TurnEvent | { type: string; [field: string]: unknown }): void =>
      deps.publish(logicalId, event);

    if (policy.requires_api_key && apiKey === undefined) {
      const message =
        'this session was created with an api_key, which is held only in memory and was lost when the daemon ' +
        'restarted; repeat session.create with the same request_id and the api_key to supply it again';
      publish({
        type: 'turn.complete',
        admission_id: job.admission.admission_id,
        outcome: 'failed',
        usage: {
          input_tokens: 0,
          output_tokens: 0,
          cache_read_tokens: 0,
          cache_write_tokens: 0,
          total_tokens: 0,
        },
        final_text: null,
        error: { reason: 'launch_credentials_unavailable', message },
      });
      return { outcome: 'failed', detail: `launch_credentials_unavailable: ${message}` };
    }

    // A compression inside the turn moves the session to its child transcript: later writes follow.
    let physicalId = receipt.current_session_id;
    const stored = await deps.sessions.loadTranscript(physicalId);
    const { repaired, added, appendable } = closeDanglingToolCalls(stored);
    if (added.length > 0) {
      if (appendable) await deps.sessions.appendToTranscript(physicalId, added);
      else await deps.sessions.rewriteTranscript(physicalId, repaired);
    }
    deps.agentStarted(logicalId);
    deps.fault('turn.claimed');
    const compress = deps.compress;
    const context: TurnContext | undefined =
      deps.contextSettings && compress
        ? {
            settings: deps.contextSettings(policy),
            compress: async (reason, signal) => {
              const outcome = await compress(logicalId, reason, signal);
              physicalId = deps.receipt(logicalId)?.current_session_id ?? physicalId;
              return outcome;
            },
          }
        : undefined;

    // The claim stored the input, and the settlement stores the final answer with the usage in one
    // commit: a plain turn costs two durable commits after its admission, shared with other sessions.
    let settled = false;
    const result = await runTurn({
      sessionId: logicalId,
      admissionId: job.admission.admission_id,
      executionGeneration: job.generation,
      model: deps.model(policy, apiKey),
      modelName: policy.model,
      systemPrompt: systemPromptFor(receipt),
      tools: deps.tools(policy.toolsets),
      cwd: policy.cwd,
      yolo: policy.yolo,
      maxTurns: policy.max_turns,
      reasoning: policy.reasoning ?? undefined,
      history: withoutInput(repaired, job.input),
      ...(context ? { context } : {}),
      input: job.input,
      inputStored: true,
      commitFinal: async (messages, end) => {
        const accepted = await job.settle({ ...settlement(end), messages, usage: end.usage });
        settled = true;
        if (!accepted) throw new Error('the turn no longer owns its admission (stale generation)');
      },
      transcript: {
        append: async (_sessionId, messages) => {
          if (messages.some((m) => m.role === 'tool')) deps.fault('tool.result');
          await deps.sessions.appendToTranscript(
            physicalId,
            messages.map((m) => ({ ...m, admission_id: job.admission.admission_id })),
          );
        },
      },
      prompts: deps.prompts,
      signal: job.signal,
      emit: (event) =>
        publish(
          event.type === 'turn.complete' ? { ...event, admission_id: job.admission.admission_id } : event,
        ),
    });
    if (settled) return settlement(result);
    return { ...settlement(result), usage: result.usage };
  };
}

/** The history before this turn: the stored transcript ends with the input its claim stored. */
function withoutInput(messages: TranscriptMessage[], input: TranscriptMessage): TranscriptMessage[] {
  const last = messages.at(-1);
  const isInput = last?.role === 'user' && last.admission_id === input.admission_id;
  return isInput ? messages.slice(0, -1) : messages;
}

function settlement(result: TurnResult): { outcome: TurnResult['outcome']; detail: string | null } {
  const detail = result.error ? `${result.error.reason}: ${result.error.message}` : null;
  return { outcome: result.outcome, detail };
}
