/**
 * Folds a chat completion, streamed or not, into one result: text, reasoning, tool calls whose
 * arguments arrived in pieces (accumulated by their index), finish reason and usage.
 */
import { randomUUID } from 'node:crypto';
import type { TokenUsage, ToolCall } from '../../domain/vocabulary.js';
import { ModelError, redactSecret, summarizeProviderText } from './errors.js';
import { SseParser } from './sse.js';
import { toTokenUsage, type WireUsage } from './wire.js';
import type { ModelDelta } from './client.js';

export interface ChatResult {
  /** The assistant's text, or null when it only called tools. */
  text: string | null;
  /** Reasoning the server sent (`reasoning_content` or `reasoning`), or null. */
  reasoning: string | null;
  toolCalls: ToolCall[];
  finishReason: string | null;
  usage: TokenUsage;
  /** The model name the server reported. */
  model: string | null;
  /** Requests sent, retries included. */
  attempts: number;
}

interface PartialCall {
  id: string;
  name: string;
  arguments: string;
}

interface WireDelta {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: unknown;
}

interface WireToolCallPiece {
  index?: unknown;
  id?: unknown;
  function?: { name?: unknown; arguments?: unknown };
}

export class CompletionAccumulator {
  private readonly parser = new SseParser();
  private text = '';
  private reasoning = '';
  private readonly calls = new Map<number, PartialCall>();
  private finishReason: string | null = null;
  private usage: WireUsage | null = null;
  private model: string | null = null;
  private done = false;

  constructor(
    private readonly secret: string | undefined,
    private readonly emit: (delta: ModelDelta) => void,
  ) {}

  /** Feeds streamed bytes; returns true once the server sent `[DONE]`. */
  pushBytes(bytes: Uint8Array): boolean {
    for (const data of this.parser.push(bytes)) this.acceptData(data);
    return this.done;
  }

  /** A non-streamed completion body. */
  acceptCompletion(body: unknown): void {
    const completion = body as {
      model?: unknown;
      usage?: WireUsage;
      choices?: { message?: WireDelta & { tool_calls?: unknown }; finish_reason?: unknown }[];
    };
    this.checkError(body);
    if (typeof completion.model === 'string') this.model = completion.model;
    if (completion.usage) this.usage = completion.usage;
    const choice = Array.isArray(completion.choices) ? completion.choices[0] : undefined;
    if (!choice || !choice.message) {
      throw new ModelError('bad_response', 'The model provider answered without a message.');
    }
    this.acceptDelta(choice.message);
    if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    this.done = true;
  }

  finish(whole: boolean): Omit<ChatResult, 'attempts'> {
    if (!whole) for (const data of this.parser.end()) this.acceptData(data);
    if (!this.done && this.finishReason === null) {
      throw new ModelError('network', 'The model provider closed the stream before the answer was complete.');
    }
    const toolCalls: ToolCall[] = [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        id: call.id || `call_${index}_${randomUUID().slice(0, 8)}`,
        type: 'function' as const,
        function: { name: call.name, arguments: call.arguments },
      }));
    return {
      text: this.text === '' ? null : this.text,
      reasoning: this.reasoning === '' ? null : this.reasoning,
      toolCalls,
      finishReason: this.finishReason,
      usage: toTokenUsage(this.usage),
      model: this.model,
    };
  }

  private acceptData(data: string): void {
    if (data.trim() === '[DONE]') {
      this.done = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(data);
    } catch {
      throw new ModelError('bad_response', 'The model provider streamed a piece that is not JSON.');
    }
    this.checkError(chunk);
    const c = chunk as {
      model?: unknown;
      usage?: WireUsage | null;
      choices?: { delta?: WireDelta; finish_reason?: unknown }[];
    };
    if (typeof c.model === 'string') this.model = c.model;
    if (c.usage) this.usage = c.usage;
    for (const choice of Array.isArray(c.choices) ? c.choices.slice(0, 1) : []) {
      if (choice.delta) this.acceptDelta(choice.delta);
      if (typeof choice.finish_reason === 'string') this.finishReason = choice.finish_reason;
    }
  }

  private acceptDelta(delta: WireDelta): void {
    const reasoning =
      typeof delta.reasoning_content === 'string'
        ? delta.reasoning_content
        : typeof delta.reasoning === 'string'
          ? delta.reasoning
          : '';
    if (reasoning) {
      this.reasoning += reasoning;
      this.emit({ type: 'reasoning', text: reasoning });
    }
    if (typeof delta.content === 'string' && delta.content) {
      this.text += delta.content;
      this.emit({ type: 'text', text: delta.content });
    }
    if (Array.isArray(delta.tool_calls)) {
      (delta.tool_calls as WireToolCallPiece[]).forEach((piece, position) =>
        this.acceptToolPiece(piece, position),
      );
    }
  }

  private acceptToolPiece(piece: WireToolCallPiece, position: number): void {
    const index = typeof piece.index === 'number' ? piece.index : position;
    let call = this.calls.get(index);
    if (!call) {
      call = { id: '', name: '', arguments: '' };
      this.calls.set(index, call);
    }
    if (typeof piece.id === 'string' && piece.id) call.id = piece.id;
    const name = piece.function?.name;
    // Most servers send the name once; a few repeat it on every piece. Never double it.
    if (typeof name === 'string' && name && name !== call.name) call.name += name;
    const args = piece.function?.arguments;
    if (typeof args === 'string') call.arguments += args;
    else if (args && typeof args === 'object') call.arguments += JSON.stringify(args);
  }

  private checkError(body: unknown): void {
    const error = (body as { error?: unknown } | null)?.error;
    if (!error) return;
    const raw =
      typeof error === 'string'
        ? error
        : typeof (error as { message?: unknown }).message === 'string'
          ? String((error as { message: string }).message)
          : JSON.stringify(error);
    const detail = summarizeProviderText(redactSecret(raw, this.secret));
    throw new ModelError('server', `The model provider reported an error: ${detail}`);
  }
}
