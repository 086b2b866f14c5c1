import { describe, expect, it } from 'vitest';
import { parseFrame } from '../../../src/protocol/jsonrpc.js';

function invalid(text: string): { id: unknown; code: number; reason: string } {
  const frame = parseFrame(text);
  if (frame.kind !== 'invalid') throw new Error(`expected invalid, got ${frame.kind}`);
  const error = frame.error.toErrorObject();
  return { id: frame.id, code: error.code, reason: error.data.reason };
}

describe('LOC transport: one JSON-RPC 2.0 object per text frame', () => {
  it('classifies a request and a notification', () => {
    expect(parseFrame('{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}')).toEqual({
      kind: 'request',
      request: { jsonrpc: '2.0', id: 1, method: 'ping', params: {} },
    });
    expect(parseFrame('{"jsonrpc":"2.0","method":"ping"}')).toMatchObject({
      kind: 'notification',
      notification: { method: 'ping' },
    });
  });

  it('answers garbage with -32700 parse_error', () => {
    expect(invalid('{not json')).toEqual({ id: null, code: -32700, reason: 'parse_error' });
  });

  it('reads an array as a batch of messages, each classified alone', () => {
    expect(parseFrame('[{"jsonrpc":"2.0","id":1,"method":"ping"}, 1]')).toMatchObject({
      kind: 'batch',
      messages: [
        { kind: 'request', request: { id: 1, method: 'ping' } },
        { kind: 'invalid', id: null },
      ],
    });
  });

  it('refuses an empty batch as invalid_request', () => {
    expect(invalid('[]')).toEqual({ id: null, code: -32600, reason: 'invalid_request' });
  });

  it('refuses a frame without a method, keeping its id for the reply', () => {
    expect(invalid('{"jsonrpc":"2.0","id":"a"}')).toEqual({
      id: 'a',
      code: -32600,
      reason: 'invalid_request',
    });
  });

  it('refuses a wrong version, a bad id type, a scalar and unknown envelope keys', () => {
    expect(invalid('{"jsonrpc":"1.0","id":1,"method":"ping"}').reason).toBe('invalid_request');
    expect(invalid('{"jsonrpc":"2.0","id":{},"method":"ping"}')).toMatchObject({ id: null, code: -32600 });
    expect(invalid('42').code).toBe(-32600);
    expect(invalid('{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}').reason).toBe('invalid_request');
  });
});
