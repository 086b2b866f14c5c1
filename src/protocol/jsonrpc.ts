/**
 * JSON-RPC 2.0 wire types and frame classification. A WebSocket text frame holds one JSON-RPC object
 * or a batch (an array of them, at most MAX_BATCH_SIZE). Pure: no I/O, no Node types, so the
 * protocol core can be reused by any transport or client.
 */
import { invalidRequest, parseError, type RpcError, type RpcErrorObject } from './errors.js';

export type RequestId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: unknown;
}

/** A request without an id: the sender wants no reply, and never gets one. */
export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: unknown;
}

export interface JsonRpcSuccess {
  jsonrpc: '2.0';
  id: RequestId;
  result: unknown;
}

export interface JsonRpcFailure {
  jsonrpc: '2.0';
  /** null when the failing frame's id could not be read. */
  id: RequestId | null;
  error: RpcErrorObject;
}

export type JsonRpcResponse = JsonRpcSuccess | JsonRpcFailure;

/**
 * The most messages one batch may hold. A batch is one frame to the connection's backpressure, so
 * this bounds how much work one frame can start; a larger batch is refused whole with one
 * invalid_request, and nothing in it runs.
 */
export const MAX_BATCH_SIZE = 100;

/** One message of a frame, as classified alone (a batch is a list of these). */
export type Message =
  | { kind: 'request'; request: JsonRpcRequest }
  | { kind: 'notification'; notification: JsonRpcNotification }
  | { kind: 'invalid'; id: RequestId | null; error: RpcError };

/**
 * What one text frame turned out to be. `invalid` carries the id when it could be recovered, so
 * the error reply can still be matched by the client.
 */
export type Frame = Message | { kind: 'batch'; messages: Message[] };

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

const ENVELOPE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params']);

export function parseFrame(text: string): Frame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { kind: 'invalid', id: null, error: parseError() };
  }
  if (!Array.isArray(value)) return classifyMessage(value);
  // JSON-RPC 2.0 §6: an empty batch is one invalid request, not an empty array of answers.
  if (value.length === 0) {
    return { kind: 'invalid', id: null, error: invalidRequest('a batch must hold at least one request') };
  }
  if (value.length > MAX_BATCH_SIZE) {
    return {
      kind: 'invalid',
      id: null,
      error: invalidRequest(
        `a batch holds at most ${MAX_BATCH_SIZE} requests; this one has ${value.length}`,
        {
          max_batch_size: MAX_BATCH_SIZE,
        },
      ),
    };
  }
  return { kind: 'batch', messages: value.map(classifyMessage) };
}

/** Classifies one JSON-RPC message; an array inside a batch is simply not a request object. */
function classifyMessage(value: unknown): Message {
  if (!isRecord(value)) {
    return { kind: 'invalid', id: null, error: invalidRequest('a frame must be one JSON object') };
  }
  const hasId = 'id' in value;
  const id = hasId && isRequestId(value.id) ? value.id : null;
  const fail = (message: string, details?: unknown): Message => ({
    kind: 'invalid',
    id,
    error: invalidRequest(message, details),
  });
  if (value.jsonrpc !== '2.0') return fail('jsonrpc must be "2.0"');
  if (hasId && !isRequestId(value.id)) return fail('id must be a string or a finite number');
  if (typeof value.method !== 'string' || value.method.length === 0) {
    return fail('method must be a non-empty string');
  }
  const extra = Object.keys(value).filter((key) => !ENVELOPE_KEYS.has(key));
  if (extra.length > 0) return fail(`unknown envelope key: ${extra.join(', ')}`, { keys: extra });
  const message = { jsonrpc: '2.0' as const, method: value.method, params: value.params };
  if (!hasId) return { kind: 'notification', notification: message };
  return { kind: 'request', request: { ...message, id: value.id as RequestId } };
}

export function success(id: RequestId, result: unknown): JsonRpcSuccess {
  return { jsonrpc: '2.0', id, result };
}

export function failure(id: RequestId | null, error: RpcError): JsonRpcFailure {
  return { jsonrpc: '2.0', id, error: error.toErrorObject() };
}

export function notification(method: string, params: unknown): JsonRpcNotification {
  return { jsonrpc: '2.0', method, params };
}
