/**
 * Issue 29: a chat-platform turn is traced like a local one: the real OpenTelemetry side
 * (createTracing) sends to a receiver in this process the turn's root with its admission (the
 * message taken), its model calls (GenAI attributes), its tool call and the delivery of its reply.
 * A scripted model, a real SQLite store, an in-memory adapter.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTracing, type GatewayTracing } from '../../../src/daemon/services/tracing.js';
import type { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import type { ChatModel, ChatResult } from '../../../src/runtime/model/client.js';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import type { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { closeGround, openGround, startMemoryGateway } from '../../fixtures/memory-gateway.js';
import { OtlpReceiver } from '../../e2e/otlp-receiver.js';

let dir: string;
let store: SqliteSessionStore;
let demo: DemoModelServer;
let gateway: MessagingGateway;
let adapter: MemoryAdapter;
let receiver: OtlpReceiver;
let tracing: GatewayTracing;

const usage = {
  input_tokens: 100,
  output_tokens: 10,
  cache_read_tokens: 20,
  cache_write_tokens: 0,
  total_tokens: 130,
};
let calls = 0;
/** A tool call first, then the answer. */
const scripted: ChatModel = {
  provider: 'scripted-provider',
  complete(): Promise<ChatResult> {
    const base = { reasoning: null, model: 'scripted-1', attempts: 1, usage };
    if (calls++ === 0)
      return Promise.resolve({
        ...base,
        text: null,
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'c1', type: 'function' as const, function: { name: 'nope', arguments: '{"secret":"x"}' } },
        ],
      });
    return Promise.resolve({ ...base, text: 'the chat answer', finishReason: 'stop', toolCalls: [] });
  },
};

beforeEach(async () => {
  ({ dir, store, model: demo } = await openGround('gatehouse-tracing-'));
  receiver = await OtlpReceiver.start();
  tracing = createTracing({
    url: `${receiver.url}/v1/traces`,
    headers: {},
    captureContent: false,
    version: 'test',
    instanceId: 'unit',
  });
  calls = 0;
  ({ gateway, adapter } = await startMemoryGateway({
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    modelBaseUrl: demo.baseUrl,
    model: scripted,
    cwd: dir,
    tracer: tracing.tracer,
  }));
});

afterEach(async () => {
  await closeGround({ dir, store, model: demo }, gateway);
  await receiver.close();
});

describe('chat-platform turn traces', () => {
  it('the root with its admission, model calls, tool call and delivery', async () => {
    const done = gateway.events.next('turn:complete', () => true);
    adapter.receive({ chat_id: 'u', chat_type: 'dm', user_id: 'u-1', message_id: '1' }, 'hello there');
    expect((await done).outcome).toBe('completed');
    await gateway.whenIdle();
    // Stopping flushes what is queued.
    await tracing.close(5_000);

    const root = await receiver.until((spans) =>
      spans.find((s) => s.name === 'gatehouse.turn' && s.attributes['gatehouse.engine'] === 'platform'),
    );
    expect(root.parentSpanId).toBe('');
    expect(root.attributes).toMatchObject({
      'gatehouse.platform': 'irc',
      'gatehouse.turn.run': 0,
      'gatehouse.turn.resumed': false,
      'gatehouse.turn.outcome': 'completed',
      'gen_ai.usage.input_tokens': 240,
      'gen_ai.usage.output_tokens': 20,
    });
    const children = receiver.spans.filter(
      (s) => s.traceId === root.traceId && s.parentSpanId === root.spanId,
    );
    expect(children.map((s) => s.name).sort()).toEqual(
      ['chat', 'chat', 'execute_tool nope', 'gatehouse.admission', 'gatehouse.delivery'].sort(),
    );
    const [first] = children.filter((s) => s.name === 'chat');
    expect(first!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'scripted-provider',
      'gen_ai.system': 'scripted-provider',
      'gen_ai.response.model': 'scripted-1',
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 10,
      'gen_ai.usage.cache_read.input_tokens': 20,
    });
    const delivery = children.find((s) => s.name === 'gatehouse.delivery')!;
    expect(delivery.attributes).toMatchObject({ 'gatehouse.platform': 'irc' });
    const tool = children.find((s) => s.name === 'execute_tool nope')!;
    // An unknown tool answers with an error: the span says so.
    expect(tool.attributes['gatehouse.tool.is_error']).toBe(true);
    expect(tool.status.code).toBe(2);
    // Content stays home by default.
    expect(receiver.bodies.join('')).not.toContain('hello there');
    expect(receiver.bodies.join('')).not.toContain('the chat answer');
  });
});
