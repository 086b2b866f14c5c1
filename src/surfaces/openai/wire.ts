/**
 * The OpenAI chat-completions wire, as much of it as a Gatehouse session answers
 * (docs/integrations.md): the request body it accepts (closed: a field it would not honour is
 * refused by name), the response and stream-chunk shapes, and OpenAI's error body. Pure.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';

/** The one model the endpoint lists: a Gatehouse session, whatever model its launch policy names. */
export const GATEHOUSE_MODEL = 'gatehouse';

const contentPart = z.looseObject({ type: z.string() });
const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: z.union([z.string(), z.array(contentPart), z.null()]).optional(),
});

export const chatRequestSchema = z.strictObject({
  model: z.string().min(1).max(200),
  messages: z.array(message).min(1).max(10_000),
  stream: z.boolean().optional(),
  stream_options: z.strictObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  /** Names the session (a session key of its own, source `api`) when no X-Gatehouse-Session is sent. */
  user: z
    .string()
    .min(1)
    .max(128)
    // eslint-disable-next-line no-control-regex
    .regex(/^[^\u0000-\u001f\u007f]*$/, 'one line without control characters')
    .optional(),
});
export type ChatRequest = z.output<typeof chatRequestSchema>;

/** A refusal in OpenAI's error shape, with its HTTP status and whether a client should retry it. */
export class OpenAiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    /** The `x-should-retry` header the official clients obey (their default retries 409 and 5xx). */
    readonly retry = false,
  ) {
    super(message);
  }

  body(): { error: { message: string; type: string; param: string | null; code: string } } {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code } };
  }
}

export const badRequest = (code: string, message: string, param: string | null = null): OpenAiError =>
  new OpenAiError(400, 'invalid_request_error', code, message, param);

/** The parsed body, or a 400 naming the first field that is wrong (an unknown one by its name). */
export function parseChatRequest(raw: unknown): ChatRequest {
  const parsed = chatRequestSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0]!;
    const where = issue.path.length > 0 ? `${issue.path.join('.')}.${key}` : key;
    throw badRequest(
      'unsupported_parameter',
      `${where} is not supported: a Gatehouse session runs with its own launch policy (model, tools, limits)`,
      where,
    );
  }
  const param = issue.path.join('.') || null;
  throw badRequest('invalid_value', `${param ?? 'the body'}: ${issue.message}`, param);
}

/**
 * The text to admit: the newest message, which must be the user's, in text. Earlier messages are
 * the client's copy of the history; the stored transcript is the history (docs/integrations.md).
 */
export function newestUserText(request: ChatRequest): string {
  const last = request.messages.at(-1)!;
  const param = `messages.${request.messages.length - 1}`;
  if (last.role !== 'user')
    throw badRequest(
      'invalid_value',
      "the last message must be the user's: it is what the session is asked",
      param,
    );
  const content = last.content;
  let text: string;
  if (typeof content === 'string') text = content;
  else if (Array.isArray(content)) {
    const other = content.find((part) => part.type !== 'text' || typeof part.text !== 'string');
    if (other) throw badRequest('invalid_value', `only text parts are supported, not "${other.type}"`, param);
    text = content.map((part) => part.text as string).join('\n');
  } else text = '';
  if (text.trim() === '') throw badRequest('invalid_value', 'the user message has no text', param);
  if (text.length > 1_000_000)
    throw badRequest('invalid_value', 'the user message is over 1,000,000 characters', param);
  return text;
}

/**
 * What an Idempotency-Key is compared by: the request without how it is delivered (stream), so a
 * retry may switch between streamed and not. The session named by header is part of it.
 */
export function requestDigest(request: ChatRequest, sessionHeader: string | null): string {
  const { stream: _stream, stream_options: _options, ...rest } = request;
  return createHash('sha256')
    .update(JSON.stringify({ ...rest, session: sessionHeader }), 'utf8')
    .digest('hex');
}

export interface CompletionUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** `chatcmpl-<admission id>`: the same admission answers every retry under the same id. */
export function completionId(admissionId: string): string {
  return `chatcmpl-${admissionId}`;
}

export function completion(
  admission: { admission_id: string; admitted_at: string },
  text: string,
  usage: CompletionUsage | null,
): Record<string, unknown> {
  return {
    id: completionId(admission.admission_id),
    object: 'chat.completion',
    created: Math.floor(Date.parse(admission.admitted_at) / 1000),
    model: GATEHOUSE_MODEL,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    ...(usage ? { usage } : {}),
  };
}

/** One `chat.completion.chunk`; `gatehouse` carries what OpenAI's shape has no field for. */
export function chunk(
  admission: { admission_id: string; admitted_at: string },
  delta: Record<string, unknown>,
  finish: 'stop' | null,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    id: completionId(admission.admission_id),
    object: 'chat.completion.chunk',
    created: Math.floor(Date.parse(admission.admitted_at) / 1000),
    model: GATEHOUSE_MODEL,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    ...extra,
  };
}

export function usageOf(
  usage: { input_tokens?: unknown; output_tokens?: unknown } | undefined,
): CompletionUsage | null {
  if (!usage || typeof usage.input_tokens !== 'number' || typeof usage.output_tokens !== 'number')
    return null;
  return {
    prompt_tokens: usage.input_tokens,
    completion_tokens: usage.output_tokens,
    total_tokens: usage.input_tokens + usage.output_tokens,
  };
}
