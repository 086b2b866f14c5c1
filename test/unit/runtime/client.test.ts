import { afterEach, describe, expect, it } from 'vitest';
import { ModelClient, type ModelDelta } from '../../../src/runtime/model/client.js';
import { ModelError } from '../../../src/runtime/model/errors.js';
import { parseRetryAfter, retryDelayMs } from '../../../src/runtime/model/retry.js';
import { SseParser } from '../../../src/runtime/model/sse.js';
import { sseAnswer, startFakeProvider, status, textAnswer, type FakeHandler } from './helpers.js';

const fast = { maxRetries: 3, baseDelayMs: 1, maxDelayMs: 5_000 };
let closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.map((c) => c()));
  closers = [];
});

async function provider(handlers: FakeHandler[]) {
  const p = await startFakeProvider(handlers);
  closers.push(() => p.close());
  return p;
}

async function failure(promise: Promise<unknown>): Promise<ModelError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

const hello = [{ role: 'user' as const, content: 'hello' }];

describe('RUN-1 SSE parsing', () => {
  it('yields the same events however the bytes are split', () => {
    const text =
      ': keep-alive\r\ndata: {"a":"é"}\r\n\r\nevent: x\ndata: line1\ndata: line2\n\ndata:[DONE]\n\n';
    const bytes = new TextEncoder().encode(text);
    const expected = ['{"a":"é"}', 'line1\nline2', '[DONE]'];
    for (let cut = 1; cut < bytes.length; cut++) {
      const parser = new SseParser();
      const got = [...parser.push(bytes.slice(0, cut)), ...parser.push(bytes.slice(cut)), ...parser.end()];
      expect(got, `cut at ${cut}`).toEqual(expected);
    }
    const parser = new SseParser();
    const oneByOne = [...bytes].flatMap((b) => parser.push(new Uint8Array([b])));
    expect([...oneByOne, ...parser.end()]).toEqual(expected);
  });

  it('delivers a final event that had no blank line after it', () => {
    const parser = new SseParser();
    expect(parser.push('data: last')).toEqual([]);
    expect(parser.end()).toEqual(['last']);
  });
});

describe('RUN-1 retry decisions', () => {
  it('reads Retry-After as seconds or as an HTTP date, and prefers it to backoff', () => {
    const now = Date.parse('2025-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:05 GMT', now)).toBe(5000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    const policy = { maxRetries: 3, baseDelayMs: 100, maxDelayMs: 10_000 };
    expect(retryDelayMs(policy, 1, 4000)).toBe(4000);
    expect(retryDelayMs(policy, 1, 60_000)).toBe(10_000);
    expect(retryDelayMs(policy, 3, null, () => 0)).toBe(200);
    expect(retryDelayMs(policy, 3, null, () => 1)).toBe(400);
  });
});

describe('RUN-1 model client', () => {
  it('streams text deltas in order and maps usage, asking for it in the request', async () => {
    const p = await provider([
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const piece of ['Hel', 'lo', ' there']) {
          res.write(`data: {"choices":[{"index":0,"delta":{"content":${JSON.stringify(piece)}}}]}\n\n`);
        }
        res.write('data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n');
        res.write(
          'data: {"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107,"prompt_tokens_details":{"cached_tokens":60}}}\n\n',
        );
        res.end('data: [DONE]\n\n');
      },
    ]);
    const deltas: ModelDelta[] = [];
    const client = new ModelClient({ baseUrl: p.baseUrl, model: 'm1' });
    const result = await client.complete({ messages: hello, onDelta: (d) => deltas.push(d) });
    expect(deltas.map((d) => d.text)).toEqual(['Hel', 'lo', ' there']);
    expect(result.text).toBe('Hello there');
    expect(result.usage).toEqual({
      input_tokens: 40,
      output_tokens: 7,
      cache_read_tokens: 60,
      cache_write_tokens: 0,
      total_tokens: 107,
    });
    expect(p.requests[0]!.body).toMatchObject({
      model: 'm1',
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('reassembles tool-call arguments streamed in pieces, by index', async () => {
    const piece = (index: number, fn: Record<string, string>, id?: string) => ({
      tool_calls: [{ index, ...(id ? { id, type: 'function' } : {}), function: fn }],
    });
    const p = await provider([
      sseAnswer(
        [
          piece(0, { name: 'terminal', arguments: '' }, 'call_a'),
          piece(1, { name: 'clarify', arguments: '{"quest' }, 'call_b'),
          piece(0, { arguments: '{"comm' }),
          piece(0, { arguments: 'and": "ls' }),
          piece(1, { arguments: 'ion": "why?"}' }),
          piece(0, { arguments: ' -la"}' }),
        ],
        'tool_calls',
      ),
    ]);
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm' }).complete({ messages: hello });
    expect(result.toolCalls).toEqual([
      { id: 'call_a', type: 'function', function: { name: 'terminal', arguments: '{"command": "ls -la"}' } },
      { id: 'call_b', type: 'function', function: { name: 'clarify', arguments: '{"question": "why?"}' } },
    ]);
    expect(result.finishReason).toBe('tool_calls');
  });

  it('reads reasoning from `reasoning_content` and from `reasoning`', async () => {
    const p = await provider([
      sseAnswer([{ reasoning_content: 'let me ' }, { reasoning: 'think' }, { content: 'ok' }]),
    ]);
    const deltas: ModelDelta[] = [];
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm' }).complete({
      messages: hello,
      onDelta: (d) => deltas.push(d),
    });
    expect(deltas).toEqual([
      { type: 'reasoning', text: 'let me ' },
      { type: 'reasoning', text: 'think' },
      { type: 'text', text: 'ok' },
    ]);
    expect(result.reasoning).toBe('let me think');
  });

  it('answers non-streamed requests too', async () => {
    const p = await provider([
      status(200, {
        model: 'm',
        choices: [{ index: 0, message: { role: 'assistant', content: 'whole' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
      }),
    ]);
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm' }).complete({
      messages: hello,
      stream: false,
    });
    expect(result.text).toBe('whole');
    expect(result.usage.total_tokens).toBe(4);
    expect(p.requests[0]!.body.stream).toBe(false);
    expect(p.requests[0]!.body.stream_options).toBeUndefined();
  });

  it('retries a 500 and returns the one answer that followed', async () => {
    const p = await provider([status(500, { error: { message: 'boom' } }), textAnswer('fine')]);
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({
      messages: hello,
    });
    expect(result.text).toBe('fine');
    expect(result.attempts).toBe(2);
    expect(p.requests).toHaveLength(2);
  });

  it('tells onRetry of each retry, its number and why, before it is sent (issue 31 item 9)', async () => {
    const p = await provider([
      status(500, { error: { message: 'boom' } }),
      status(503, { error: { message: 'busy' } }),
      textAnswer('fine'),
    ]);
    const retries: { attempt: number; reason: string; requestsSoFar: number }[] = [];
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({
      messages: hello,
      onRetry: (r) =>
        retries.push({ attempt: r.attempt, reason: r.reason, requestsSoFar: p.requests.length }),
    });
    expect(result.text).toBe('fine');
    expect(retries.map((r) => [r.attempt, r.requestsSoFar])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    expect(retries.map((r) => r.reason)).toEqual(['HTTP 500', 'HTTP 503']);
  });

  it('waits as long as a 429 Retry-After says before retrying', async () => {
    const arrivals: number[] = [];
    const p = await provider([
      (req, res, body) => {
        arrivals.push(Date.now());
        status(429, { error: { message: 'slow down' } }, { 'retry-after': '1' })(req, res, body);
      },
      (req, res, body) => {
        arrivals.push(Date.now());
        textAnswer('after the wait')(req, res, body);
      },
    ]);
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({
      messages: hello,
    });
    expect(result.text).toBe('after the wait');
    // Backoff alone would have waited about 1 ms; only Retry-After explains a second.
    expect(arrivals[1]! - arrivals[0]!).toBeGreaterThanOrEqual(950);
  });

  it('reports a 401 as an auth error at once, without retrying and without the api key', async () => {
    const key = 'sk-test-very-secret-0123456789';
    const p = await provider([
      (req, res) => {
        // A careless server echoing the credential back must not leak it into our message.
        status(401, { error: { message: `Incorrect API key provided: ${req.headers.authorization}` } })(
          req,
          res,
          {
            messages: [],
          },
        );
      },
    ]);
    const client = new ModelClient({ baseUrl: p.baseUrl, model: 'm', apiKey: key, retry: fast });
    const error = await failure(client.complete({ messages: hello }));
    expect(error.kind).toBe('auth');
    expect(error.status).toBe(401);
    expect(error.message).toMatch(/rejected the credentials/);
    expect(error.message).not.toContain(key);
    expect(error.message).toContain('[redacted]');
    expect(p.requests).toHaveLength(1);
    expect(p.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
  });

  it('classifies context overflow and does not retry other 4xx', async () => {
    const p = await provider([
      status(400, { error: { message: "This model's maximum context length is 8192 tokens" } }),
    ]);
    const error = await failure(
      new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({ messages: hello }),
    );
    expect(error.kind).toBe('context_overflow');
    expect(p.requests).toHaveLength(1);
  });

  it('retries a connection reset before any output', async () => {
    const p = await provider([(req) => req.socket.destroy(), textAnswer('second try')]);
    const result = await new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({
      messages: hello,
    });
    expect(result.text).toBe('second try');
    expect(p.requests).toHaveLength(2);
  });

  it('never retries once output reached the caller', async () => {
    const p = await provider([
      (req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"choices":[{"index":0,"delta":{"content":"partial"}}]}\n\n', () =>
          req.socket.destroy(),
        );
      },
      textAnswer('should not be asked'),
    ]);
    const deltas: ModelDelta[] = [];
    const error = await failure(
      new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({
        messages: hello,
        onDelta: (d) => deltas.push(d),
      }),
    );
    expect(error.kind).toBe('network');
    expect(deltas).toEqual([{ type: 'text', text: 'partial' }]);
    expect(p.requests).toHaveLength(1);
  });

  it('times out waiting for an answer, and when a stream goes silent', async () => {
    const p = await provider([
      () => undefined, // never answers
      (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: {"choices":[{"index":0,"delta":{"content":"then silence"}}]}\n\n');
      },
    ]);
    const client = new ModelClient({
      baseUrl: p.baseUrl,
      model: 'm',
      firstByteTimeoutMs: 100,
      idleTimeoutMs: 100,
      retry: { ...fast, maxRetries: 0 },
    });
    const first = await failure(client.complete({ messages: hello }));
    expect(first.kind).toBe('timeout');
    expect(first.message).toMatch(/did not respond in time/);
    const second = await failure(client.complete({ messages: hello }));
    expect(second.kind).toBe('timeout');
  });

  it('cancels through the AbortSignal', async () => {
    const p = await provider([() => undefined]);
    const controller = new AbortController();
    const pending = new ModelClient({ baseUrl: p.baseUrl, model: 'm', retry: fast }).complete({
      messages: hello,
      signal: controller.signal,
    });
    await p.waitForRequests(1);
    controller.abort();
    const error = await failure(pending);
    expect(error.kind).toBe('cancelled');
  });

  it('reports an unreachable provider as a network error naming the cause', async () => {
    const p = await provider([textAnswer('x')]);
    await p.close();
    closers = [];
    const error = await failure(
      new ModelClient({
        baseUrl: p.baseUrl,
        model: 'm',
        apiKey: 'sk-abcdef123456',
        retry: { ...fast, maxRetries: 1 },
      }).complete({
        messages: hello,
      }),
    );
    expect(error.kind).toBe('network');
    expect(error.message).toMatch(/ECONNREFUSED/);
    expect(error.attempts).toBe(2);
    expect(error.message).not.toContain('sk-abcdef123456');
  });
});
