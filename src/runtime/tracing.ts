/**
 * Traces of turns (docs/observability.md, "Traces"): the contract the engines and the runner write
 * spans through, and the runner's own spans. The daemon implements it with OpenTelemetry, loaded
 * only when `telemetry.otlp_endpoint` is set; otherwise every span is NO_SPAN, which does nothing.
 *
 * One trace per run of a turn: its root span (`gatehouse.turn`) and, below it, the admission, the
 * claim, each model call (GenAI semantic conventions), each tool call with its approval wait, each
 * compression, and the settlement or delivery. A turn resumed after a crash is a new run: a new
 * trace whose root links to the run it continues (TurnTracer.turn), so both read as one story.
 *
 * Message content (prompts, answers, tool arguments and results, commands asked about) goes on a
 * span only when `captureContent` is true (`telemetry.capture_content`).
 */
import type { ToolCall } from '../domain/vocabulary.js';
import type { ChatRequest, ChatResult } from './model/client.js';
import type { CompressOutcome } from './context/budget.js';
import type { TurnEvent } from './types.js';

export type TraceValue = string | number | boolean | readonly string[];
/** Attributes of a span; undefined and null values are left out. */
export type TraceAttributes = Readonly<Record<string, TraceValue | undefined | null>>;

export interface SpanOptions {
  /** Epoch milliseconds; default now. */
  startTime?: number;
  /** A call out of the process (a model request): SpanKind CLIENT. Default INTERNAL. */
  client?: boolean;
}

export interface TraceSpan {
  /** Whether message content may be put on spans (`telemetry.capture_content`). */
  readonly captureContent: boolean;
  child(name: string, attributes?: TraceAttributes, options?: SpanOptions): TraceSpan;
  set(attributes: TraceAttributes): void;
  /** Marks the span failed: status ERROR with the stable reason (and `error.type`). */
  fail(reason: string, message?: string): void;
  /** Ends the span (at epoch milliseconds `at`, default now); a second end does nothing. */
  end(at?: number): void;
}

/**
 * One run of a turn: the turn (a local admission id, a chat turn id) and how many runs it had
 * before this one (0 for the first; a resume after a crash is the next). Its trace and root span
 * ids are derived from both, so the run a crash interrupted can be linked to from the next without
 * anything stored.
 */
export interface TurnRun {
  turnId: string;
  run: number;
}

export interface TurnTracer {
  /** The root span of a run of a turn; a run after the first links to the run before it. */
  turn(run: TurnRun, attributes: TraceAttributes, options?: { startTime?: number }): TraceSpan;
  /** The root of a trace of its own, linked to a run of a turn (recovery deciding its fate). */
  linked(name: string, to: TurnRun, attributes: TraceAttributes): TraceSpan;
}

export const NO_SPAN: TraceSpan = {
  captureContent: false,
  child: () => NO_SPAN,
  set: () => undefined,
  fail: () => undefined,
  end: () => undefined,
};

export const NO_TRACER: TurnTracer = { turn: () => NO_SPAN, linked: () => NO_SPAN };

/** Span names; the model and tool spans follow the GenAI conventions (`chat {model}`, `execute_tool {name}`). */
export const SPAN = {
  turn: 'gatehouse.turn',
  admission: 'gatehouse.admission',
  claim: 'gatehouse.claim',
  resume: 'gatehouse.resume',
  recovery: 'gatehouse.recovery',
  approval: 'gatehouse.approval',
  clarify: 'gatehouse.clarify',
  compression: 'gatehouse.compression',
  settle: 'gatehouse.settle',
  delivery: 'gatehouse.delivery',
} as const;

/**
 * The spans of one turn the runner writes: model calls, tool calls and the prompts they wait on,
 * compressions. `emit` wraps the turn's event stream (tool and prompt spans follow its events).
 */
export class RunnerTrace {
  private tool: TraceSpan | null = null;
  private readonly prompts = new Map<string, TraceSpan>();
  /** Who answered each prompt, told by the prompt host just before the prompt settles. */
  private readonly answeredBy = new Map<string, string>();

  constructor(
    private readonly turn: TraceSpan,
    /** The configured provider of the session's model (`custom` for its own base_url). */
    private readonly provider: string,
  ) {}

  emit(emit: (event: TurnEvent) => void): (event: TurnEvent) => void {
    if (this.turn === NO_SPAN) return emit;
    return (event) => {
      this.observe(event);
      emit(event);
    };
  }

  /** A human answered prompt `promptId` (the principal, as `subject@provider`). */
  answered(promptId: string, by: string): void {
    if (this.prompts.has(promptId)) this.answeredBy.set(promptId, by);
  }

  /** The span of one model call: ended by the returned function with its result or error. */
  modelCall(request: ChatRequest, defaultModel: string | undefined): (end: unknown) => void {
    if (this.turn === NO_SPAN) return () => undefined;
    // Without a model name (a client's own default) the span is named by its operation alone.
    const model = request.model ?? defaultModel;
    const span = this.turn.child(
      model === undefined ? 'chat' : `chat ${model}`,
      {
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': this.provider,
        'gen_ai.system': this.provider,
        'gen_ai.request.model': model,
        ...(this.turn.captureContent ? { 'gen_ai.input.messages': JSON.stringify(request.messages) } : {}),
      },
      { client: true },
    );
    return (end) => {
      if (isChatResult(end)) {
        span.set({
          'gen_ai.response.model': end.model,
          'gen_ai.response.finish_reasons': end.finishReason === null ? [] : [end.finishReason],
          'gen_ai.usage.input_tokens':
            end.usage.input_tokens + end.usage.cache_read_tokens + end.usage.cache_write_tokens,
          'gen_ai.usage.output_tokens': end.usage.output_tokens,
          'gen_ai.usage.cache_read.input_tokens': end.usage.cache_read_tokens,
          'gen_ai.usage.cache_creation.input_tokens': end.usage.cache_write_tokens,
          'gatehouse.model.attempts': end.attempts,
          ...(this.turn.captureContent ? { 'gen_ai.output.messages': JSON.stringify(outputOf(end)) } : {}),
        });
      } else {
        const kind =
          typeof end === 'object' && end !== null && 'kind' in end ? String(end.kind) : 'model_error';
        span.fail(kind, end instanceof Error ? end.message : undefined);
      }
      span.end();
    };
  }

  /** The span of one compression inside the turn. */
  async compression(
    reason: 'threshold' | 'overflow',
    run: () => Promise<CompressOutcome>,
  ): Promise<CompressOutcome> {
    const span = this.turn.child(SPAN.compression, { 'gatehouse.compression.reason': reason });
    try {
      const outcome = await run();
      span.set({
        'gatehouse.compression.outcome': outcome.kind,
        ...(outcome.kind === 'skipped' ? { 'gatehouse.compression.skipped': outcome.reason } : {}),
      });
      return outcome;
    } catch (error) {
      span.fail('compression_failed', error instanceof Error ? error.message : undefined);
      throw error;
    } finally {
      span.end();
    }
  }

  private observe(event: TurnEvent): void {
    const content = this.turn.captureContent;
    switch (event.type) {
      case 'tool.start':
        this.tool?.end();
        this.tool = this.turn.child(`execute_tool ${event.name}`, {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': event.name,
          'gen_ai.tool.call.id': event.tool_call_id,
          'gen_ai.tool.type': 'function',
          ...(content ? { 'gen_ai.tool.call.arguments': event.arguments } : {}),
        });
        return;
      case 'tool.complete':
        if (!this.tool) return;
        this.tool.set({
          'gatehouse.tool.is_error': event.is_error,
          ...(content ? { 'gen_ai.tool.call.result': event.summary } : {}),
        });
        if (event.is_error) this.tool.fail('tool_error');
        this.tool.end();
        this.tool = null;
        return;
      case 'approval.request':
        this.prompts.set(
          event.prompt_id,
          (this.tool ?? this.turn).child(SPAN.approval, {
            'gatehouse.prompt.id': event.prompt_id,
            'gatehouse.approval.kind': event.kind,
            ...(content
              ? { 'gatehouse.approval.command': event.command, 'gatehouse.approval.reason': event.reason }
              : {}),
          }),
        );
        return;
      case 'clarify.request':
        this.prompts.set(
          event.prompt_id,
          (this.tool ?? this.turn).child(SPAN.clarify, {
            'gatehouse.prompt.id': event.prompt_id,
            ...(content ? { 'gatehouse.clarify.question': event.question } : {}),
          }),
        );
        return;
      case 'approval.settled':
      case 'clarify.settled': {
        const span = this.prompts.get(event.prompt_id);
        if (!span) return;
        this.prompts.delete(event.prompt_id);
        const by = this.answeredBy.get(event.prompt_id);
        this.answeredBy.delete(event.prompt_id);
        span.set({
          'gatehouse.prompt.outcome': event.outcome.kind,
          'gatehouse.prompt.answered_by': answeredBy(event, by),
          ...(by === undefined ? {} : { 'enduser.id': by }),
          ...(event.type === 'approval.settled' && event.outcome.kind === 'approved'
            ? { 'gatehouse.approval.choice': event.outcome.choice }
            : {}),
        });
        span.end();
        return;
      }
      case 'turn.complete':
        this.tool?.end();
        this.tool = null;
        for (const span of this.prompts.values()) span.end();
        this.prompts.clear();
        this.turn.set({
          'gatehouse.turn.outcome': event.outcome,
          'gen_ai.usage.input_tokens':
            event.usage.input_tokens + event.usage.cache_read_tokens + event.usage.cache_write_tokens,
          'gen_ai.usage.output_tokens': event.usage.output_tokens,
          ...(content && event.final_text !== null ? { 'gatehouse.turn.final_text': event.final_text } : {}),
        });
        if (event.error) this.turn.fail(event.error.reason, event.error.message);
        return;
      default:
        return;
    }
  }
}

/**
 * Who ended a prompt: `human` (with `enduser.id`), the session's memory (`remembered`), a yolo
 * session (`yolo`), the configuration (`policy`: approvals.mode deny), or nobody (`timeout`,
 * `cancelled`).
 */
function answeredBy(
  event: Extract<TurnEvent, { type: 'approval.settled' | 'clarify.settled' }>,
  by: string | undefined,
): string {
  const outcome = event.outcome;
  if (outcome.kind === 'timeout' || outcome.kind === 'cancelled') return outcome.kind;
  if (outcome.kind === 'approved' && (outcome.choice === 'remembered' || outcome.choice === 'yolo'))
    return outcome.choice;
  if (outcome.kind === 'denied' && outcome.by === 'config') return 'policy';
  return by === undefined ? 'unknown' : 'human';
}

function isChatResult(value: unknown): value is ChatResult {
  return typeof value === 'object' && value !== null && 'toolCalls' in value && 'usage' in value;
}

function outputOf(result: ChatResult): {
  role: 'assistant';
  content: string | null;
  tool_calls?: ToolCall[];
} {
  return {
    role: 'assistant',
    content: result.text,
    ...(result.toolCalls.length > 0 ? { tool_calls: result.toolCalls } : {}),
  };
}
