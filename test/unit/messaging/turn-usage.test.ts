/**
 * Issue 26 item 11: a chat turn's tokens are counted whatever its outcome, as a local turn's are,
 * and `last_prompt_tokens` holds the prompt size of its last model call. A scripted model (each call
 * reports known usage), a real SQLite store, an in-memory adapter.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import type { TokenUsage } from '../../../src/domain/vocabulary.js';
import type { ChatModel, ChatRequest, ChatResult } from '../../../src/runtime/model/client.js';
import { ModelError } from '../../../src/runtime/model/errors.js';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import type { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { closeGround, openGround, startMemoryGateway } from '../../fixtures/memory-gateway.js';

let dir: string;
let store: SqliteSessionStore;
let demo: DemoModelServer;
let gateway: MessagingGateway;
let adapter: MemoryAdapter;

/** What the scripted model does on its n-th call of a turn. */
type Step = 'tool' | 'answer' | 'fail' | 'wait';
let script: Step[] = [];
let calls = 0;
let waiting: () => void = () => undefined;
const called = () => new Promise<void>((resolve) => (waiting = resolve));

const usage = (input: number, output: number): TokenUsage => ({
  input_tokens: input,
  output_tokens: output,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  total_tokens: input + output,
});

const scripted: ChatModel = {
  complete(request: ChatRequest): Promise<ChatResult> {
    const step = script[calls++]!;
    const base = { reasoning: null, model: 'scripted', attempts: 1, finishReason: 'stop' };
    if (step === 'tool') {
      const call = {
        id: `c${calls}`,
        type: 'function' as const,
        function: { name: 'nope', arguments: '{}' },
      };
      return Promise.resolve({ ...base, text: null, toolCalls: [call], usage: usage(100, 10) });
    }
    if (step === 'answer')
      return Promise.resolve({ ...base, text: 'done', toolCalls: [], usage: usage(130, 5) });
    if (step === 'fail') return Promise.reject(new ModelError('server', 'The provider failed.'));
    // 'wait': until the turn is stopped.
    waiting();
    return new Promise((_resolve, reject) =>
      request.signal!.addEventListener('abort', () => reject(new ModelError('cancelled', 'cancelled'))),
    );
  },
};

beforeEach(async () => {
  ({ dir, store, model: demo } = await openGround('gatehouse-turn-usage-'));
  script = [];
  calls = 0;
  ({ gateway, adapter } = await startMemoryGateway({
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    modelBaseUrl: demo.baseUrl,
    model: scripted,
    cwd: dir,
  }));
});

afterEach(() => closeGround({ dir, store, model: demo }, gateway));

let nextMessage = 1;
const say = (text: string) =>
  adapter.receive({ chat_id: 'u', chat_type: 'dm', user_id: 'u-1', message_id: String(nextMessage++) }, text);

function counters() {
  return store.db
    .prepare('SELECT input_tokens, output_tokens, total_tokens, last_prompt_tokens FROM routes')
    .get() as Record<string, number>;
}

async function turn(text: string, steps: Step[], whileWaiting?: () => void): Promise<string> {
  script = steps;
  calls = 0;
  const done = gateway.events.next('turn:complete', () => true);
  const reached = called();
  say(text);
  if (whileWaiting) {
    await reached;
    whileWaiting();
  }
  const { outcome } = await done;
  await gateway.whenIdle();
  return outcome;
}

describe('chat-platform turn usage', () => {
  it('a completed turn records its tokens and the prompt size of its last call', async () => {
    expect(await turn('hello', ['tool', 'answer'])).toBe('completed');
    expect(counters()).toEqual({
      input_tokens: 230,
      output_tokens: 15,
      total_tokens: 245,
      last_prompt_tokens: 130,
    });
  });

  it('a failed turn counts the tokens of the calls it made', async () => {
    expect(await turn('hello', ['tool', 'fail'])).toBe('failed');
    expect(counters()).toEqual({
      input_tokens: 100,
      output_tokens: 10,
      total_tokens: 110,
      last_prompt_tokens: 100,
    });
  });

  it('an interrupted turn counts them too', async () => {
    expect(await turn('hello', ['tool', 'wait'], () => say('/stop'))).toBe('interrupted');
    expect(counters()).toEqual({
      input_tokens: 100,
      output_tokens: 10,
      total_tokens: 110,
      last_prompt_tokens: 100,
    });
  });
});
