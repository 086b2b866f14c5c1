/**
 * JSON-RPC 2.0 batches (issue 12, item 12; JSON-RPC 2.0 §6): an array of requests gets an array of
 * responses in request order; notifications are answered by nothing, so a batch of notifications
 * gets no reply at all; each message is authorised and validated on its own; `[]` and batches over
 * MAX_BATCH_SIZE are one invalid_request and run nothing.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Dispatcher, type CallerContext } from '../../../src/protocol/dispatcher.js';
import { MAX_BATCH_SIZE, type JsonRpcResponse } from '../../../src/protocol/jsonrpc.js';
import { OPERATOR_CALLER, recordingLogger, WORKER_CALLER } from './harness.js';

const operator = OPERATOR_CALLER;
const worker = WORKER_CALLER;

function setup() {
  const calls: string[] = [];
  const dispatcher = new Dispatcher<CallerContext>(recordingLogger())
    .register('echo', {
      params: z.strictObject({ text: z.string().min(1) }),
      capability: null,
      handler: async (params) => {
        calls.push(params.text);
        // The first request answers last: the batch's answers must still follow request order.
        if (params.text === 'slow') await new Promise((resolve) => setImmediate(resolve));
        return params.text;
      },
    })
    .register('make', {
      params: z.strictObject({}),
      capability: 'session:create',
      handler: () => {
        calls.push('make');
        return 'made';
      },
    });
  const frame = (value: unknown, context = operator) =>
    dispatcher.handleFrame(JSON.stringify(value), context);
  return { calls, frame };
}

const req = (id: number, method: string, params: unknown = {}) => ({ jsonrpc: '2.0', id, method, params });
const note = (method: string, params: unknown = {}) => ({ jsonrpc: '2.0', method, params });

function reasonOf(response: JsonRpcResponse): string | null {
  return 'error' in response ? response.error.data.reason : null;
}

describe('issue 12 item 12: JSON-RPC batches', () => {
  it('answers each request of a batch in order, each authorised and validated on its own', async () => {
    const { calls, frame } = setup();
    const answers = (await frame(
      [
        req(1, 'echo', { text: 'slow' }),
        req(2, 'echo', { text: '' }),
        note('echo', { text: 'quiet' }),
        req(3, 'make'),
        req(4, 'nope'),
        req(5, 'echo', { text: 'fast', principal: 'me' }),
        1,
        req(6, 'echo', { text: 'last' }),
      ],
      worker,
    )) as JsonRpcResponse[];
    expect(answers.map((a) => a.id)).toEqual([1, 2, 3, 4, 5, null, 6]);
    expect(answers.map(reasonOf)).toEqual([
      null,
      'invalid_params',
      'permission_denied',
      'method_not_found',
      'invalid_params',
      'invalid_request',
      null,
    ]);
    expect(answers[0]).toMatchObject({ result: 'slow' });
    expect(answers[6]).toMatchObject({ result: 'last' });
    // Handlers start in batch order; the refused ones never ran.
    expect(calls).toEqual(['slow', 'quiet', 'last']);
  });

  it('the same batch from an operator runs the request the worker was refused', async () => {
    const { frame } = setup();
    const answers = (await frame([req(1, 'make'), req(2, 'echo', { text: 'x' })])) as JsonRpcResponse[];
    expect(answers).toEqual([
      { jsonrpc: '2.0', id: 1, result: 'made' },
      { jsonrpc: '2.0', id: 2, result: 'x' },
    ]);
  });

  it('a batch of notifications only gets no reply, and its notifications ran', async () => {
    const { calls, frame } = setup();
    expect(await frame([note('echo', { text: 'a' }), note('nope'), note('echo', { text: 'b' })])).toBeNull();
    expect(calls).toEqual(['a', 'b']);
  });

  it('[1] gets [-32600]; [1, 2, 3] gets three; a nested array is one invalid request', async () => {
    const { frame } = setup();
    const invalid = {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, data: { reason: 'invalid_request' } },
    };
    expect(await frame([1])).toMatchObject([invalid]);
    expect(await frame([1, 2, 3])).toMatchObject([invalid, invalid, invalid]);
    expect(await frame([[]])).toMatchObject([invalid]);
  });

  it('[] is one -32600 error object, not an array', async () => {
    const { frame } = setup();
    const answer = await frame([]);
    expect(Array.isArray(answer)).toBe(false);
    expect(answer).toMatchObject({ id: null, error: { code: -32600, data: { reason: 'invalid_request' } } });
  });

  it(`a batch over ${MAX_BATCH_SIZE} is one -32600 naming the bound, and nothing in it runs`, async () => {
    const { calls, frame } = setup();
    const full = Array.from({ length: MAX_BATCH_SIZE }, (_, i) => req(i + 1, 'echo', { text: `t${i}` }));
    expect(await frame(full)).toHaveLength(MAX_BATCH_SIZE);
    calls.length = 0;
    const over = [...full, req(MAX_BATCH_SIZE + 1, 'echo', { text: 'one too many' })];
    const answer = await frame(over);
    expect(answer).toMatchObject({
      id: null,
      error: {
        code: -32600,
        data: { reason: 'invalid_request', details: { max_batch_size: MAX_BATCH_SIZE } },
      },
    });
    expect((answer as { error: { message: string } }).error.message).toContain(`at most ${MAX_BATCH_SIZE}`);
    expect(calls).toEqual([]);
  });

  it('a batch that is not valid JSON is one parse error', async () => {
    const { calls } = setup();
    const dispatcher = new Dispatcher<CallerContext>(recordingLogger());
    expect(
      await dispatcher.handleFrame('[{"jsonrpc":"2.0","id":1,"method":"echo"},', operator),
    ).toMatchObject({
      id: null,
      error: { code: -32700 },
    });
    expect(calls).toEqual([]);
  });
});
