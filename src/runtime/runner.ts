/**
 * The turn runner: one turn of one session under its frozen policy. Model call → tool calls →
 * results → model … until a final answer, `max_turns`, a model failure or an interrupt.
 *
 * Persistence invariants (a crash at any instant leaves a transcript the model can continue from):
 * - the input message is stored before the first model call;
 * - an assistant message with tool calls is stored before any of its tools runs;
 * - every stored tool call gets exactly one tool result, real or synthetic (interrupts write
 *   "[interrupted before completion]" for calls that did not finish);
 * - each message is stored once, and `message.stored` is emitted after the store accepted it.
 * A crash between storing a call and its result leaves a dangling call; before the next turn the
 * gateway closes it with closeDanglingToolCalls (transcript-repair.ts), which says its effect is unknown.
 */
import type { TokenUsage, ToolCall, ToolOutcome, TranscriptMessage } from '../domain/vocabulary.js';
import { isModelError } from './model/errors.js';
import type { ChatModel, ChatRequest, ChatResult, ModelDelta } from './model/client.js';
import { addUsage, toWireMessage, toWireTool, ZERO_USAGE, type WireMessage } from './model/wire.js';
import { runToolStep, summarize } from './tool-step.js';
import { NO_SPAN, RunnerTrace, type TraceSpan } from './tracing.js';
import {
  overThreshold,
  reportedPromptTokens,
  requestTokens,
  thresholdTokens,
  type CompressOutcome,
  type ReportedPrompt,
  type TurnContext,
} from './context/budget.js';
import type {
  PromptHost,
  ToolContext,
  ToolDefinition,
  TranscriptSink,
  TurnEvent,
  TurnOutcome,
  TurnScope,
} from './types.js';

/** The header that names the admission on every model request (the demo model and tests count by it). */
export const ADMISSION_HEADER = 'x-gatehouse-admission';

export interface RunTurnOptions {
  /** Logical session id. */
  sessionId: string;
  admissionId: string | undefined;
  executionGeneration: number;
  /** The model client (or anything with the same `complete`). */
  model: ChatModel;
  /** The session's model name; the client's default when absent. */
  modelName?: string;
  /** The frozen system prompt (with the session context of CTX-1). Empty means none. */
  systemPrompt: string;
  /** Exactly the tools of the session's toolsets: the model is shown these schemas and no others. */
  tools: ToolDefinition[];
  cwd: string;
  yolo: boolean;
  /** The most model calls this turn may make. */
  maxTurns: number;
  /** Reasoning effort passed to the model (`reasoning_effort`), when set. */
  reasoning?: string | undefined;
  /** The stored transcript before this turn. */
  history: TranscriptMessage[];
  /**
   * `history` already mapped by toWireMessage, index for index (the agent cache keeps it, so a turn
   * does not map the whole history again). Absent: the runner maps `history`.
   */
  wireHistory?: readonly WireMessage[];
  /** The user message this turn answers; stored first. */
  input: TranscriptMessage;
  /** The caller already stored `input` (with the claim of its admission): only announce it. */
  inputStored?: boolean;
  transcript: TranscriptSink;
  /**
   * Makes the end of the turn durable in ONE write: its last messages (the final answer, or the words
   * an interrupt cut short) together with whatever the caller settles beside them. When given, the
   * runner does not store those messages itself, and emits their `message.stored` and `turn.complete`
   * only after this resolves. If it fails, the turn ends `failed` with reason `transcript_write`.
   */
  commitFinal?: (messages: TranscriptMessage[], result: TurnEnding) => Promise<void>;
  prompts: PromptHost;
  /** Interrupt. An abort reason of `'cancelled'` reports the outcome `cancelled`, else `interrupted`. */
  signal: AbortSignal;
  emit: (event: TurnEvent) => void;
  /** How long an interrupted tool may take to stop before its synthetic result is written. Default 2 s. */
  toolStopGraceMs?: number;
  /**
   * The model's context budget and the session's compression. Before each model call a request over
   * the threshold is compressed first; a provider's "context too long" is compressed once and the
   * call retried once. Without it the runner sends the whole history as it is.
   */
  context?: TurnContext;
  /**
   * REC-7: the turn goes on after a crash. `turn` is what it had stored after its input (replayed
   * to the model as it is), `calls` the stored tool calls still to run, first; then model calls as
   * usual. The input is already stored.
   */
  resume?: { turn: readonly TranscriptMessage[]; calls: readonly ToolCall[] };
  /**
   * REC-7: records durably that a tool call's execution starts, before its process is spawned (see
   * ToolContext.markStarted). Absent: nothing is recorded.
   */
  markToolStarted?: (call: ToolCall) => Promise<void>;
  /** The root span of this run of the turn (runtime/tracing.ts); absent: nothing is traced. */
  trace?: TraceSpan;
  /**
   * Issue 28: at each step boundary, before a model call, the steers admitted for this turn, stored
   * durably as its user messages (with `steer_id`) by this call; the model sees them in this call.
   * Absent: the turn takes no steers.
   */
  steers?: () => Promise<TranscriptMessage[]>;
}

/** The abort reason of a turn past `limits.turn_timeout_s`: it settles `failed` / `turn_timeout`. */
export const TURN_TIMEOUT = 'turn_timeout';

export type TurnComplete = Extract<TurnEvent, { type: 'turn.complete' }>;
/** What runTurn resolves with: the data of its `turn.complete` event. */
export type TurnResult = Omit<TurnComplete, 'type'>;
/**
 * What runTurn resolves with and commitFinal is given: the turn's `turn.complete` data and the
 * prompt tokens of its last model call as the provider counted them (`last_prompt_tokens`, what the
 * next request starts from); null when no call reported any.
 */
export type TurnEnding = TurnResult & { readonly last_prompt_tokens: number | null };

class TranscriptWriteError extends Error {}

export async function runTurn(options: RunTurnOptions): Promise<TurnEnding> {
  const { sessionId, admissionId, executionGeneration, signal } = options;
  const trace = new RunnerTrace(options.trace ?? NO_SPAN, options.model.provider ?? 'unknown');
  const emit = trace.emit(options.emit);
  const usage: TokenUsage = { ...ZERO_USAGE };
  let lastPromptTokens: number | null = null;
  const maxTurns = Math.max(1, Math.floor(options.maxTurns));
  const stopOutcome = (): TurnOutcome => (signal.reason === 'cancelled' ? 'cancelled' : 'interrupted');

  const stamp = (message: TranscriptMessage): TranscriptMessage =>
    admissionId === undefined ? message : { ...message, admission_id: admissionId };

  const finishNow = (
    outcome: TurnOutcome,
    finalText: string | null = null,
    error: { reason: string; message: string } | null = null,
  ): TurnEnding => {
    const result: TurnResult = { outcome, usage, final_text: finalText, error };
    emit({ type: 'turn.complete', ...result });
    return { ...result, last_prompt_tokens: lastPromptTokens };
  };

  const store = async (message: TranscriptMessage): Promise<TranscriptMessage> => {
    const stamped = stamp(message);
    try {
      await options.transcript.append(sessionId, [stamped]);
    } catch (error) {
      throw new TranscriptWriteError(`The transcript could not be written: ${describe(error)}`);
    }
    emit({ type: 'message.stored', message: stamped });
    return stamped;
  };

  /** Ends the turn with its last messages: stored and announced before `turn.complete`. */
  const finish = async (
    outcome: TurnOutcome,
    last: TranscriptMessage[] = [],
    finalText: string | null = null,
    error: { reason: string; message: string } | null = null,
  ): Promise<TurnEnding> => {
    const commitFinal = options.commitFinal;
    if (!commitFinal) {
      for (const message of last) await store(message);
      return finishNow(outcome, finalText, error);
    }
    const stamped = last.map(stamp);
    try {
      await commitFinal(stamped, {
        outcome,
        usage,
        final_text: finalText,
        error,
        last_prompt_tokens: lastPromptTokens,
      });
    } catch (failure) {
      return finishNow('failed', null, {
        reason: 'transcript_write',
        message: `The transcript could not be written: ${describe(failure)}`,
      });
    }
    for (const message of stamped) emit({ type: 'message.stored', message });
    return finishNow(outcome, finalText, error);
  };

  /** Ends a turn its signal stopped: an interrupt, a cancel, or the turn's wall-clock limit. */
  const stop = (last: TranscriptMessage[] = []): Promise<TurnEnding> =>
    signal.reason === TURN_TIMEOUT
      ? finish('failed', last, null, {
          reason: TURN_TIMEOUT,
          message: 'The turn ran past its time limit (limits.turn_timeout_s) and was stopped.',
        })
      : finish(stopOutcome(), last);

  const scope: TurnScope = {
    sessionId,
    admissionId,
    executionGeneration,
    signal,
    emit,
    answered: (promptId, by) => trace.answered(promptId, by),
  };
  /** The tool call running now (its started mark names it; `reportProgress` publishes its progress). */
  let current: ToolCall | undefined;
  /** What a human answered to the approval of the tool call running now (kept on its tool message). */
  let approval: ToolOutcome['approval'];
  const context: ToolContext = {
    cwd: options.cwd,
    signal,
    sessionId,
    admissionId,
    get toolCallId() {
      return current?.id;
    },
    executionGeneration,
    yolo: options.yolo,
    requestApproval: async (request) => {
      const outcome = await options.prompts.requestApproval(scope, request);
      approval = outcome.kind === 'approved' ? outcome.choice : outcome.kind;
      return outcome;
    },
    askClarify: (request) => options.prompts.askClarify(scope, request),
    reportProgress: (progress) => {
      if (current) {
        emit({ type: 'tool.output', tool_call_id: current.id, name: current.function.name, ...progress });
      }
    },
    markStarted: async () => {
      if (current && options.markToolStarted) await options.markToolStarted(current);
    },
  };
  const toolsByName = new Map(options.tools.map((t) => [t.name, t]));
  const wireTools = options.tools.map(toWireTool);
  for (const tool of options.tools) tool.prepare?.();
  const headers: Record<string, string> =
    admissionId === undefined ? {} : { [ADMISSION_HEADER]: admissionId };

  emit({ type: 'turn.start', admission_id: admissionId, execution_generation: executionGeneration });
  try {
    // The transcript as the model sees it (`view`), and the same as wire messages.
    let view: TranscriptMessage[] = [...options.history];
    if (options.inputStored) emit({ type: 'message.stored', message: options.input });
    view.push(options.inputStored ? options.input : await store(options.input));
    // The first request reuses the cached wire form of the history when the caller has it; a
    // compression below rebuilds the wire from the compressed view.
    let wire = firstWire(options.systemPrompt, view, options.wireHistory);
    const push = (message: TranscriptMessage): void => {
      view.push(message);
      wire.push(toWireMessage(message));
    };
    const budget = options.context;
    const toolsJson = wireTools.length > 0 ? JSON.stringify(wireTools) : '';
    let reported: ReportedPrompt | null = null;
    const compress = async (reason: 'threshold' | 'overflow'): Promise<CompressOutcome> => {
      const outcome = await trace.compression(reason, () => budget!.compress(reason, signal));
      if (outcome.kind === 'compressed') {
        view = [...outcome.messages];
        wire = wireOf(options.systemPrompt, view);
        reported = null;
      }
      return outcome;
    };
    let overflowRetried = false;

    /**
     * Runs stored tool calls in order, each result stored. Resolves `interrupted` when the turn was
     * interrupted, or the failure of a call that fails its turn (calls after it are answered without
     * running, so the transcript stays whole); null when the turn goes on.
     */
    const runTools = async (
      calls: readonly ToolCall[],
    ): Promise<'interrupted' | { reason: string; message: string } | null> => {
      let interrupted = false;
      let failure: { reason: string; message: string } | undefined;
      for (const toolCall of calls) {
        if (failure) {
          push(await store(notRun(toolCall, failure.message)));
          continue;
        }
        emit({
          type: 'tool.start',
          tool_call_id: toolCall.id,
          name: toolCall.function.name,
          arguments: toolCall.function.arguments,
        });
        approval = undefined;
        current = toolCall;
        const step = await runToolStep(toolCall, toolsByName, context, options.toolStopGraceMs ?? 2000);
        current = undefined;
        interrupted ||= step.interrupted;
        const stored = await store({
          role: 'tool',
          tool_call_id: toolCall.id,
          name: toolCall.function.name,
          content: step.result.content,
          tool_outcome: {
            is_error: step.result.isError === true,
            ...(approval === undefined ? {} : { approval }),
          },
          ...(step.interrupted ? { interrupted: true } : {}),
        });
        push(stored);
        emit({
          type: 'tool.complete',
          tool_call_id: toolCall.id,
          name: toolCall.function.name,
          summary: summarize(step.result.content),
          is_error: step.result.isError === true,
          duration_ms: step.durationMs,
        });
        if (!step.interrupted) failure = step.result.failTurn;
      }
      return interrupted ? 'interrupted' : (failure ?? null);
    };
    /** Ends the turn after its tools when they asked it to end: interrupted, or failed. */
    const afterTools = (ran: Awaited<ReturnType<typeof runTools>>): Promise<TurnEnding> | null =>
      ran === 'interrupted' || signal.aborted ? stop() : ran ? finish('failed', [], null, ran) : null;

    // A resumed turn: what it stored is replayed as it is, its open tool calls run first, and its
    // earlier model calls count against max_turns.
    let call = 0;
    if (options.resume) {
      for (const message of options.resume.turn) push(message);
      call = options.resume.turn.filter((m) => m.role === 'assistant').length;
      const ended = afterTools(await runTools(options.resume.calls));
      if (ended) return await ended;
    }

    for (; call < maxTurns; call++) {
      if (signal.aborted) return await stop();
      if (options.steers) {
        let steers: TranscriptMessage[];
        try {
          steers = await options.steers();
        } catch (error) {
          throw new TranscriptWriteError(`The steer could not be stored: ${describe(error)}`);
        }
        for (const steer of steers) {
          emit({ type: 'message.stored', message: steer });
          emit({
            type: 'steer.applied',
            admission_id: admissionId,
            steer_id: steer.steer_id ?? '',
            text: steer.content ?? '',
          });
          push(steer);
        }
      }
      if (budget && overThreshold(budget.settings, options.systemPrompt, view, toolsJson, reported)) {
        const outcome = await compress('threshold');
        if (signal.aborted) return await stop();
        // No request is sent over the window (issue 26 item 1): what compression could not shrink
        // (a single message larger than the window) ends the turn here, not at the provider.
        if (requestTokens(options.systemPrompt, view, toolsJson, reported) > budget.settings.window)
          return await finish('failed', [], null, {
            reason: 'context_overflow',
            message: overflowMessage(budget, outcome.kind === 'skipped' ? outcome : null, true),
          });
      }
      let streamed = '';
      let result: ChatResult;
      const request: ChatRequest = {
        messages: wire,
        tools: wireTools,
        ...(options.modelName ? { model: options.modelName } : {}),
        reasoningEffort: options.reasoning,
        stream: true,
        headers,
        signal,
        onDelta: (delta: ModelDelta) => {
          if (delta.type === 'text') streamed += delta.text;
          emit({ type: delta.type === 'text' ? 'text.delta' : 'reasoning.delta', text: delta.text });
        },
        onRetry: (retry) => emit({ type: 'model.retry', ...retry }),
      };
      const called = trace.modelCall(request, options.modelName);
      try {
        result = await options.model.complete(request);
        called(result);
      } catch (error) {
        called(error);
        if (signal.aborted) {
          // Viewers saw these words; keep them. Half-streamed tool calls are dropped: none ran.
          return await stop(streamed ? [{ role: 'assistant', content: streamed, interrupted: true }] : []);
        }
        if (isModelError(error) && error.kind === 'context_overflow' && budget && !streamed) {
          // Compress once and retry this call once; only then is the overflow the turn's end.
          const outcome = overflowRetried ? null : await compress('overflow');
          overflowRetried = true;
          if (outcome?.kind === 'compressed' && !signal.aborted) {
            call--;
            continue;
          }
          return await finish('failed', [], null, {
            reason: 'context_overflow',
            message: overflowMessage(budget, outcome),
          });
        }
        if (isModelError(error))
          return await finish('failed', [], null, { reason: error.kind, message: error.message });
        return await finish('failed', [], null, {
          reason: 'model_error',
          message: `The model call failed: ${describe(error)}`,
        });
      }
      addUsage(usage, result.usage);
      reported = { tokens: reportedPromptTokens(result.usage), messages: view.length };
      if (reported.tokens > 0) lastPromptTokens = reported.tokens;

      if (result.toolCalls.length === 0) {
        const text = result.text ?? '';
        return await finish(
          'completed',
          [withReasoning({ role: 'assistant', content: text }, result.reasoning)],
          text,
        );
      }

      const assistant = await store(
        withReasoning(
          { role: 'assistant', content: result.text, tool_calls: result.toolCalls },
          result.reasoning,
        ),
      );
      push(assistant);
      const ended = afterTools(await runTools(result.toolCalls));
      if (ended) return await ended;
    }
    return await finish('failed', [], null, {
      reason: 'max_turns',
      message: `The turn reached its limit of ${maxTurns} model calls without a final answer.`,
    });
  } catch (error) {
    if (error instanceof TranscriptWriteError) {
      return finishNow('failed', null, { reason: 'transcript_write', message: error.message });
    }
    return finishNow('failed', null, {
      reason: 'internal',
      message: `The turn failed unexpectedly: ${describe(error)}`,
    });
  }
}

function wireOf(systemPrompt: string, view: readonly TranscriptMessage[]): WireMessage[] {
  const wire: WireMessage[] = systemPrompt ? [{ role: 'system', content: systemPrompt }] : [];
  for (const message of view) wire.push(toWireMessage(message));
  return wire;
}

/** The first request's wire: `wireHistory` (the wire form of all but the last of `view`) when given. */
function firstWire(
  systemPrompt: string,
  view: readonly TranscriptMessage[],
  wireHistory: readonly WireMessage[] | undefined,
): WireMessage[] {
  if (!wireHistory || wireHistory.length !== view.length - 1) return wireOf(systemPrompt, view);
  const wire: WireMessage[] = systemPrompt ? [{ role: 'system', content: systemPrompt }] : [];
  for (const message of wireHistory) wire.push(message);
  wire.push(toWireMessage(view[view.length - 1]!));
  return wire;
}

/** What the user is told when the conversation still does not fit: what happened, what to do. */
function overflowMessage(context: TurnContext, outcome: CompressOutcome | null, unsent = false): string {
  const window = `${context.settings.window} tokens`;
  const what = unsent
    ? `The conversation does not fit the model's context window (${window}) and Gatehouse could not compress the conversation enough${outcome?.kind === 'skipped' ? ` (${outcome.reason})` : ''}, so it was not sent.`
    : outcome === null
      ? 'The model refused the request as too long for its context window even after Gatehouse compressed the conversation and retried once.'
      : outcome.kind === 'skipped'
        ? `The model refused the request as too long for its context window (${window}), and Gatehouse could not compress the conversation: ${outcome.reason}.`
        : 'The model refused the request as too long for its context window.';
  return (
    `${what} The window configured is ${window} (compression starts at ${thresholdTokens(context.settings)}). ` +
    'Start a new conversation with /new (RPC session.create), or use a model with a larger window ' +
    '(model.context_window in config.yaml), or lower compression.tail_tokens.'
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The answer to a call that never ran because an earlier call of its batch failed the turn. */
function notRun(call: ToolCall, why: string): TranscriptMessage {
  return {
    role: 'tool',
    tool_call_id: call.id,
    name: call.function.name,
    content: `This tool call did not run: ${why}`,
    tool_outcome: { is_error: true },
  };
}

function withReasoning(message: TranscriptMessage, reasoning: string | null): TranscriptMessage {
  return reasoning ? { ...message, reasoning } : message;
}
