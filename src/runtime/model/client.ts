/**
 * A lean client for any OpenAI-compatible chat-completions endpoint (OpenAI, OpenRouter, vLLM,
 * llama.cpp server, Ollama, the demo model). It streams by default, reassembles tool calls whose
 * arguments arrive in pieces, reads reasoning deltas, maps usage, retries what is safe to retry and
 * turns every failure into one typed ModelError. The API key goes into the Authorization header and
 * nowhere else. Why fetch and not the `openai` package: see docs/runtime.md.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  classifyHttpError,
  isModelError,
  ModelError,
  redactSecret,
  summarizeProviderText,
} from './errors.js';
import {
  DEFAULT_RETRY_POLICY,
  isRetryableStatus,
  parseRetryAfter,
  retryDelayMs,
  type RetryPolicy,
} from './retry.js';
import { CompletionAccumulator, type ChatResult } from './accumulate.js';
import type { WireMessage, WireTool } from './wire.js';

export type { ChatResult } from './accumulate.js';

export interface ModelClientOptions {
  /** The API root, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8080/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; never logged, never part of an error message. */
  apiKey?: string | undefined;
  /**
   * Where `apiKey` came from, for the message of a refused key (`the variable OPENAI_API_KEY
   * (model.api_key_env)`): a name, never the key.
   */
  keySource?: string | undefined;
  /** The default model name; a request may name another. */
  model: string;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** Longest wait for the response headers of one attempt. Default 60 s. */
  firstByteTimeoutMs?: number;
  /** Longest silence between two pieces of a streamed body. Default 60 s. */
  idleTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /**
   * How the provider takes a reasoning effort: `reasoning_effort: "low"` (OpenAI, the default) or
   * `reasoning: {effort: "low"}` (OpenRouter). `none`: the provider takes none, nothing is sent.
   */
  reasoningFormat?: 'reasoning_effort' | 'reasoning_object' | 'none';
}

/** One piece of output as it streams. Tool-call pieces are accumulated, not streamed to callers. */
export type ModelDelta = { type: 'text'; text: string } | { type: 'reasoning'; text: string };

export interface ChatRequest {
  messages: WireMessage[];
  tools?: WireTool[];
  /** Overrides the client's model for this request. */
  model?: string;
  /** Sent in the provider's form (`reasoningFormat`) when set (e.g. `low`, `medium`, `high`). */
  reasoningEffort?: string | undefined;
  /** The most tokens the answer may have (`max_tokens`); absent: the provider's own limit. */
  maxOutputTokens?: number | undefined;
  /** Default true. */
  stream?: boolean;
  /** Extra headers for this request only, e.g. `x-gatehouse-admission`. */
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  onDelta?: (delta: ModelDelta) => void;
  /** Told before each retry: its number (1 = the first retry), the wait before it and why. */
  onRetry?: (retry: { attempt: number; delay_ms: number; reason: string }) => void;
}

/** What the turn runner needs from a model: the client, or anything answering the same way. */
export interface ChatModel {
  /** The configured provider's name (`custom` for a session's own base_url), for traces. */
  readonly provider?: string;
  complete(request: ChatRequest): Promise<ChatResult>;
}

/** Why one attempt failed, and whether another attempt is allowed. */
interface AttemptFailure {
  error: ModelError;
  retryable: boolean;
  retryAfterMs: number | null;
}

export class ModelClient implements ChatModel {
  private readonly url: string;
  private readonly policy: RetryPolicy;
  private readonly firstByteTimeoutMs: number;
  private readonly idleTimeoutMs: number;

  constructor(private readonly options: ModelClientOptions) {
    this.url = `${options.baseUrl.replace(/\/+$/, '')}/chat/completions`;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.firstByteTimeoutMs = options.firstByteTimeoutMs ?? 60_000;
    this.idleTimeoutMs = options.idleTimeoutMs ?? 60_000;
  }

  get model(): string {
    return this.options.model;
  }

  async complete(request: ChatRequest): Promise<ChatResult> {
    const stream = request.stream ?? true;
    const body: Record<string, unknown> = {
      model: request.model ?? this.options.model,
      messages: request.messages,
      stream,
    };
    if (request.tools && request.tools.length > 0) body.tools = request.tools;
    if (request.maxOutputTokens !== undefined) body.max_tokens = request.maxOutputTokens;
    if (stream) body.stream_options = { include_usage: true };
    if (request.reasoningEffort) Object.assign(body, this.reasoningField(request.reasoningEffort));
    const payload = JSON.stringify(body);
    // Once a delta reached the caller, a retry would show the user a second, different answer.
    const progress = { emitted: false };

    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.attempt(request, payload, stream, progress);
        return { ...result, attempts: attempt };
      } catch (thrown) {
        const failure = this.toFailure(thrown, request.signal);
        const canRetry = failure.retryable && !progress.emitted && attempt <= this.policy.maxRetries;
        if (!canRetry) throw withAttempts(failure.error, attempt);
        const delay = retryDelayMs(this.policy, attempt, failure.retryAfterMs);
        // What failed, not the final verdict the message carries ("retries were exhausted").
        const reason =
          failure.error.status !== null
            ? `HTTP ${failure.error.status}`
            : failure.error.kind.replace(/_/g, ' ');
        request.onRetry?.({ attempt, delay_ms: delay, reason });
        try {
          await sleep(delay, undefined, { signal: request.signal });
        } catch {
          throw new ModelError('cancelled', 'The model request was cancelled.', null, attempt);
        }
      }
    }
  }

  private reasoningField(effort: string): Record<string, unknown> {
    switch (this.options.reasoningFormat ?? 'reasoning_effort') {
      case 'reasoning_effort':
        return { reasoning_effort: effort };
      case 'reasoning_object':
        return { reasoning: { effort } };
      case 'none':
        return {};
    }
  }

  private headers(request: ChatRequest, stream: boolean): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: stream ? 'text/event-stream' : 'application/json',
      ...this.options.headers,
      ...request.headers,
    };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    return headers;
  }

  private async attempt(
    request: ChatRequest,
    payload: string,
    stream: boolean,
    progress: { emitted: boolean },
  ): Promise<Omit<ChatResult, 'attempts'>> {
    const controller = new AbortController();
    const onCallerAbort = () => controller.abort(request.signal?.reason);
    if (request.signal?.aborted) throw new ModelError('cancelled', 'The model request was cancelled.');
    request.signal?.addEventListener('abort', onCallerAbort, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const arm = (ms: number, what: string) => {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(new TimeoutSignal(what, ms)), ms);
    };
    try {
      arm(this.firstByteTimeoutMs, 'waiting for the model provider to answer');
      const response = await fetch(this.url, {
        method: 'POST',
        headers: this.headers(request, stream),
        body: payload,
        signal: controller.signal,
      });
      if (!response.ok) {
        arm(this.idleTimeoutMs, 'reading the error answer');
        const text = await response.text();
        throw this.httpFailure(response.status, text, response.headers.get('retry-after'));
      }
      const accumulator = new CompletionAccumulator(this.options.apiKey, (delta) => {
        progress.emitted = true;
        request.onDelta?.(delta);
      });
      const body = bodyKind(response.headers.get('content-type'), stream);
      if (body === 'json' || !response.body) {
        // Also a streamed request answered whole (a server that ignores `stream`): read it as one.
        arm(this.idleTimeoutMs, 'reading the answer');
        accumulator.acceptCompletion(parseJson(await response.text()));
        return accumulator.finish(true);
      }
      if (body !== 'stream') {
        await response.body.cancel().catch(() => undefined);
        throw new ModelError(
          'bad_response',
          `The model provider answered with content type ${summarizeProviderText(body.unexpected, 80)} where ${
            stream ? 'a stream (text/event-stream)' : 'JSON (application/json)'
          } was asked for. Check that model.base_url points at an OpenAI-compatible API.`,
        );
      }
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      for (;;) {
        arm(this.idleTimeoutMs, 'waiting for the next piece of the streamed answer');
        const { done, value } = await reader.read();
        if (done) break;
        const finished = accumulator.pushBytes(value);
        // An abort wins even when the rest of the answer was already in the buffer.
        if (request.signal?.aborted) throw new ModelError('cancelled', 'The model request was cancelled.');
        if (finished) {
          await reader.cancel().catch(() => undefined);
          break;
        }
      }
      return accumulator.finish(false);
    } catch (thrown) {
      // A timeout or abort surfaces from fetch as the abort reason; keep our own marker visible.
      if (controller.signal.aborted && !isModelError(thrown) && !isHttpFailure(thrown)) {
        throw controller.signal.reason instanceof TimeoutSignal ? controller.signal.reason : thrown;
      }
      throw thrown;
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onCallerAbort);
    }
  }

  private httpFailure(status: number, text: string, retryAfter: string | null): HttpFailure {
    const detail = summarizeProviderText(redactSecret(extractProviderMessage(text), this.options.apiKey));
    const { kind, message } = classifyHttpError(status, detail, this.options.keySource);
    return new HttpFailure(new ModelError(kind, message, status), parseRetryAfter(retryAfter));
  }

  private toFailure(thrown: unknown, signal: AbortSignal | undefined): AttemptFailure {
    if (signal?.aborted) {
      return {
        error: new ModelError('cancelled', 'The model request was cancelled.'),
        retryable: false,
        retryAfterMs: null,
      };
    }
    if (thrown instanceof HttpFailure) {
      const status = thrown.error.status ?? 0;
      return { error: thrown.error, retryable: isRetryableStatus(status), retryAfterMs: thrown.retryAfterMs };
    }
    if (thrown instanceof TimeoutSignal) {
      return {
        error: new ModelError(
          'timeout',
          `The model provider did not respond in time (${thrown.ms} ms ${thrown.what}).`,
        ),
        retryable: true,
        retryAfterMs: null,
      };
    }
    if (isModelError(thrown)) {
      return {
        error: thrown,
        retryable: thrown.kind === 'server' || thrown.kind === 'network',
        retryAfterMs: null,
      };
    }
    const cause = describeNetworkCause(thrown);
    return {
      error: new ModelError(
        'network',
        redactSecret(
          `Could not reach the model provider at ${safeOrigin(this.url)}: ${cause}.`,
          this.options.apiKey,
        ),
      ),
      retryable: true,
      retryAfterMs: null,
    };
  }
}

class TimeoutSignal extends Error {
  constructor(
    readonly what: string,
    readonly ms: number,
  ) {
    super(`timeout ${what}`);
  }
}

class HttpFailure extends Error {
  constructor(
    readonly error: ModelError,
    readonly retryAfterMs: number | null,
  ) {
    super(error.message);
  }
}

function isHttpFailure(value: unknown): value is HttpFailure {
  return value instanceof HttpFailure;
}

function withAttempts(error: ModelError, attempts: number): ModelError {
  const message = attempts > 1 ? `${error.message} (gave up after ${attempts} attempts)` : error.message;
  return new ModelError(error.kind, message, error.status, attempts);
}

/**
 * What a successful answer's body is, by its content type. A streamed request may be answered with
 * a whole JSON completion (some servers ignore `stream`); anything else is not an answer at all.
 * A missing content type is read as what was asked for.
 */
function bodyKind(contentType: string | null, stream: boolean): 'stream' | 'json' | { unexpected: string } {
  if (contentType === null || contentType.trim() === '') return stream ? 'stream' : 'json';
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/event-stream' && stream) return 'stream';
  if (type === 'application/json' || type.endsWith('+json')) return 'json';
  return { unexpected: type };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new ModelError('bad_response', 'The model provider answered with something that is not JSON.');
  }
}

/** The `error.message` of an OpenAI-style error body, or the raw text. */
function extractProviderMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (parsed.error && typeof parsed.error.message === 'string') return parsed.error.message;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: the raw text is the best we have.
  }
  return text;
}

/** Node's fetch hides the socket error in `cause`; name it in words (ECONNRESET, ECONNREFUSED…). */
function describeNetworkCause(thrown: unknown): string {
  const parts: string[] = [];
  let current: unknown = thrown;
  for (let depth = 0; current && depth < 4; depth++) {
    const e = current as { code?: unknown; message?: unknown; cause?: unknown };
    if (typeof e.code === 'string') parts.push(e.code);
    else if (typeof e.message === 'string' && e.message) parts.push(e.message);
    current = e.cause;
  }
  const unique = [...new Set(parts)];
  return unique.length > 0 ? unique.join(': ') : 'connection failed';
}

/** The origin only: a base URL must not carry credentials, but never echo a path or query either. */
function safeOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'the configured base_url';
  }
}
