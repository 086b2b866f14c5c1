/**
 * The demo model's answers in the OpenAI wire format, without any I/O: the streamed chunks and the
 * non-streamed completion for a request body, and an in-process ChatModel for benchmarks and for
 * tests that do not need HTTP. The HTTP server (server.ts) sends exactly these.
 */
import type { ToolCall } from '../../domain/vocabulary.js';
import type { ChatModel, ChatRequest, ChatResult } from '../model/client.js';
import { ModelError } from '../model/errors.js';
import { classifyHttpError } from '../model/errors.js';
import { toTokenUsage, type WireMessage, type WireUsage } from '../model/wire.js';
import { countRequestTokens } from '../context/tokens.js';
import {
  DEMO_MODEL_ID,
  estimateTokens,
  scriptReply,
  tokenize,
  type DemoReply,
  type DemoRequestBody,
} from './script.js';

/** How many pieces a tool call's arguments are streamed in, at least (to exercise reassembly). */
const ARGUMENT_PIECES = 4;

/**
 * The prompt tokens of a request. With a context window the demo counts like a provider, with the
 * tokenizer (runtime/context/tokens.ts); without one the rough estimate is enough and costs nothing.
 */
export function demoPromptTokens(body: DemoRequestBody, contextWindow: number | undefined): number {
  if (contextWindow === undefined) return estimateTokens(JSON.stringify(body.messages ?? []));
  return countRequestTokens((body.messages ?? []) as WireMessage[], body.tools ?? []);
}

/**
 * OpenAI's answer to a request over the window (HTTP 400, `context_length_exceeded`), or null when
 * the request fits. The demo keeps no state: the caller passes its window.
 */
export function demoOverflow(
  body: DemoRequestBody,
  contextWindow: number | undefined,
): Record<string, unknown> | null {
  if (contextWindow === undefined) return null;
  const tokens = demoPromptTokens(body, contextWindow);
  if (tokens <= contextWindow) return null;
  return {
    error: {
      message:
        `This model's maximum context length is ${contextWindow} tokens. However, your messages resulted in ` +
        `${tokens} tokens. Please reduce the length of the messages.`,
      type: 'invalid_request_error',
      param: 'messages',
      code: 'context_length_exceeded',
    },
  };
}

function usageOf(
  body: DemoRequestBody,
  reply: DemoReply,
  contextWindow?: number,
  costPerMTok?: number,
): WireUsage {
  const prompt = demoPromptTokens(body, contextWindow);
  const completion =
    estimateTokens(reply.text ?? '') +
    estimateTokens(reply.reasoning ?? '') +
    estimateTokens(reply.toolCall?.arguments ?? '');
  const usage: WireUsage = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
  };
  // Asked to, it reports its own cost as OpenRouter does (`usage.cost`, US dollars).
  if (costPerMTok !== undefined) usage.cost = ((prompt + completion) * costPerMTok) / 1_000_000;
  return usage;
}

function toolCallsOf(reply: DemoReply): ToolCall[] | undefined {
  if (!reply.toolCall) return undefined;
  const { id, name, arguments: args } = reply.toolCall;
  return [{ id, type: 'function', function: { name, arguments: args } }];
}

/** The non-streamed `chat.completion` answer. */
export function demoCompletion(
  body: DemoRequestBody,
  id = 'chatcmpl-demo',
  contextWindow?: number,
  costPerMTok?: number,
): Record<string, unknown> {
  const reply = scriptReply(body);
  const message: Record<string, unknown> = { role: 'assistant', content: reply.text };
  if (reply.reasoning) message.reasoning_content = reply.reasoning;
  const toolCalls = toolCallsOf(reply);
  if (toolCalls) message.tool_calls = toolCalls;
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: DEMO_MODEL_ID,
    choices: [{ index: 0, message, finish_reason: reply.toolCall ? 'tool_calls' : 'stop' }],
    usage: usageOf(body, reply, contextWindow, costPerMTok),
  };
}

/** The streamed `chat.completion.chunk` objects, in order (the caller appends `[DONE]`). */
export function demoChunks(
  body: DemoRequestBody,
  id = 'chatcmpl-demo',
  contextWindow?: number,
  costPerMTok?: number,
): Record<string, unknown>[] {
  const reply = scriptReply(body);
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id,
    object: 'chat.completion.chunk',
    created,
    model: DEMO_MODEL_ID,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks: Record<string, unknown>[] = [chunk({ role: 'assistant', content: '' })];
  for (const piece of tokenize(reply.reasoning ?? '')) chunks.push(chunk({ reasoning_content: piece }));
  for (const piece of tokenize(reply.text ?? '')) chunks.push(chunk({ content: piece }));
  if (reply.toolCall) {
    const { id: callId, name, arguments: args } = reply.toolCall;
    chunks.push(
      chunk({ tool_calls: [{ index: 0, id: callId, type: 'function', function: { name, arguments: '' } }] }),
    );
    const size = Math.max(1, Math.ceil(args.length / ARGUMENT_PIECES));
    for (let i = 0; i < args.length; i += size) {
      chunks.push(chunk({ tool_calls: [{ index: 0, function: { arguments: args.slice(i, i + size) } }] }));
    }
  }
  chunks.push(chunk({}, reply.toolCall ? 'tool_calls' : 'stop'));
  if (body.stream_options?.include_usage === true) {
    chunks.push({
      id,
      object: 'chat.completion.chunk',
      created,
      model: DEMO_MODEL_ID,
      choices: [],
      usage: usageOf(body, reply, contextWindow, costPerMTok),
    });
  }
  return chunks;
}

/**
 * The demo model as an in-process ChatModel: the same script and deltas, no HTTP. For benchmarks and
 * for callers that want the stand-in without a port.
 */
export function inProcessDemoModel(options: { contextWindow?: number } = {}): ChatModel {
  const contextWindow = options.contextWindow;
  return {
    complete(request: ChatRequest): Promise<ChatResult> {
      if (request.signal?.aborted) {
        return Promise.reject(new ModelError('cancelled', 'The model request was cancelled.'));
      }
      const body: DemoRequestBody = { messages: request.messages, tools: request.tools ?? [] };
      const overflow = demoOverflow(body, contextWindow);
      if (overflow !== null) {
        const said = (overflow.error as { message: string }).message;
        const { kind, message } = classifyHttpError(400, said);
        return Promise.reject(new ModelError(kind, message, 400));
      }
      const reply = scriptReply(body);
      for (const piece of tokenize(reply.reasoning ?? ''))
        request.onDelta?.({ type: 'reasoning', text: piece });
      for (const piece of tokenize(reply.text ?? '')) request.onDelta?.({ type: 'text', text: piece });
      return Promise.resolve({
        text: reply.text,
        reasoning: reply.reasoning,
        toolCalls: toolCallsOf(reply) ?? [],
        finishReason: reply.toolCall ? 'tool_calls' : 'stop',
        usage: toTokenUsage(usageOf(body, reply, contextWindow)),
        model: DEMO_MODEL_ID,
        attempts: 1,
      });
    },
  };
}

/**
 * How the demo model answers a compression's summary request: well (`summary`, the default), or in
 * one of the ways a real model answers it badly, for tests of what Gatehouse does then (issue 26
 * item 1): no text, a tool call instead of text, an HTTP 500, never (`hang`: the request is held
 * until the client gives up), or a "summary" longer than the conversation it should shorten.
 */
export type DemoSummaryAnswer = 'summary' | 'empty' | 'tool_call' | 'error' | 'hang' | 'long';

/** The non-streamed answer of a bad summary (not `summary` nor `hang`): [HTTP status, body]. */
export function badSummaryCompletion(
  answer: Exclude<DemoSummaryAnswer, 'summary' | 'hang'>,
  body: DemoRequestBody,
  id: string,
): [number, Record<string, unknown>] {
  if (answer === 'error')
    return [
      500,
      { error: { message: 'The demo model failed to summarise (as asked).', type: 'server_error' } },
    ];
  const request = (body.messages ?? [])
    .map((m) => (typeof m.content === 'string' ? m.content : ''))
    .join('\n');
  const message: Record<string, unknown> =
    answer === 'tool_call'
      ? {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: `call_${id}`,
              type: 'function',
              function: { name: 'terminal', arguments: '{"command":"ls"}' },
            },
          ],
        }
      : { role: 'assistant', content: answer === 'empty' ? '' : `${request}\n${request}` };
  return [
    200,
    {
      id,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: DEMO_MODEL_ID,
      choices: [{ index: 0, message, finish_reason: answer === 'tool_call' ? 'tool_calls' : 'stop' }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    },
  ];
}
