import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Dispatcher, type CallerContext } from '../../../src/protocol/dispatcher.js';
import { notFound } from '../../../src/protocol/errors.js';
import { OPERATOR_CALLER, recordingLogger, WORKER_CALLER } from './harness.js';

const operator = OPERATOR_CALLER;
const worker = WORKER_CALLER;

function setup() {
  const logger = recordingLogger();
  const calls: unknown[] = [];
  const dispatcher = new Dispatcher<CallerContext>(logger)
    .register('echo', {
      params: z.strictObject({ text: z.string().min(1), count: z.number().int().optional() }),
      capability: 'session:read',
      handler: (params) => {
        calls.push(params);
        return params;
      },
    })
    .register('make', { params: z.strictObject({}), capability: 'session:create', handler: () => 'made' })
    .register('explode', {
      params: z.strictObject({}),
      capability: null,
      handler: () => {
        throw new Error('secret path /home/owner/.gatehouse/state.db is locked');
      },
    })
    .register('missing', {
      params: z.strictObject({}),
      capability: null,
      handler: () => Promise.reject(notFound('no such session')),
    });
  const call = async (method: string, params: unknown, context = operator) => {
    const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });
    return (await dispatcher.handleFrame(text, context)) as {
      result?: unknown;
      error?: { code: number; message: string; data: { reason: string; details?: unknown } };
    };
  };
  return { dispatcher, logger, calls, call };
}

describe('LOC errors: one dispatcher turns every failure into a typed response', () => {
  it('answers a known method with its result', async () => {
    const { call } = setup();
    expect((await call('echo', { text: 'hi' })).result).toEqual({ text: 'hi' });
  });

  it('answers an unknown method with -32601 method_not_found', async () => {
    const { call } = setup();
    expect((await call('nope', {})).error).toMatchObject({
      code: -32601,
      data: { reason: 'method_not_found' },
    });
  });

  it('names an unknown param key in -32602 invalid_params and does not run the handler', async () => {
    const { call, calls } = setup();
    const { error } = await call('echo', { text: 'hi', colour: 'red' });
    expect(error).toMatchObject({ code: -32602, data: { reason: 'invalid_params' } });
    expect(error!.message).toContain('params.colour');
    expect(calls).toEqual([]);
  });

  it('names the path and problem of a malformed value', async () => {
    const { call } = setup();
    const { error } = await call('echo', { text: '', count: 1.5 });
    expect(error!.message).toContain('params.text');
    expect(error!.message).toContain('params.count');
    expect(error!.data.details).toMatchObject({
      issues: [{ path: 'params.text' }, { path: 'params.count' }],
    });
  });

  it('AUTH-1 refuses identity, capability and operator keys in params, saying the server stamps them', async () => {
    const { call, calls } = setup();
    for (const key of ['principal', 'identity', 'capabilities', 'operator', 'subject', 'profile']) {
      const { error } = await call('echo', { text: 'hi', [key]: 'x' });
      expect(error).toMatchObject({
        code: -32602,
        data: { reason: 'invalid_params', details: { keys: [key] } },
      });
      expect(error!.message).toContain('stamped by the server');
    }
    expect(calls).toEqual([]);
  });

  it('AUTH-2 refuses a caller without the capability with permission_denied', async () => {
    const { call } = setup();
    expect((await call('make', {}, worker)).error).toMatchObject({
      code: -32001,
      data: { reason: 'permission_denied', details: { capability: 'session:create' } },
    });
    expect((await call('make', {}, operator)).result).toBe('made');
  });

  it('turns a thrown plain Error into internal_error without leaking it, and logs the cause', async () => {
    const { call, logger } = setup();
    const reply = await call('explode', {});
    expect(reply.error).toEqual({
      code: -32603,
      message: 'internal error',
      data: { reason: 'internal_error' },
    });
    expect(JSON.stringify(reply)).not.toContain('secret');
    expect(
      logger.lines.some((line) => line.level === 'error' && JSON.stringify(line.details).includes('explode')),
    ).toBe(true);
  });

  it('passes an RpcError through unchanged', async () => {
    const { call } = setup();
    expect((await call('missing', {})).error).toMatchObject({
      data: { reason: 'not_found' },
      message: 'no such session',
    });
  });

  it('treats absent params as {} and refuses positional params', async () => {
    const { dispatcher } = setup();
    const absent = await dispatcher.handleFrame('{"jsonrpc":"2.0","id":1,"method":"make"}', operator);
    expect(absent).toMatchObject({ result: 'made' });
    const positional = await dispatcher.handleFrame(
      '{"jsonrpc":"2.0","id":2,"method":"make","params":[1]}',
      operator,
    );
    expect(positional).toMatchObject({ error: { data: { reason: 'invalid_params' } } });
  });

  it('never answers a notification, even one that fails', async () => {
    const { dispatcher, calls } = setup();
    expect(
      await dispatcher.handleFrame('{"jsonrpc":"2.0","method":"echo","params":{"text":"n"}}', operator),
    ).toBeNull();
    expect(
      await dispatcher.handleFrame('{"jsonrpc":"2.0","method":"explode","params":{}}', operator),
    ).toBeNull();
    expect(await dispatcher.handleFrame('{"jsonrpc":"2.0","method":"nope"}', operator)).toBeNull();
    expect(calls).toEqual([{ text: 'n' }]);
  });
});
