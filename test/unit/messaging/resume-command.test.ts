/**
 * `/resume <id>` on chat platforms (switchSession with its compare-and-swap) and the agent cache
 * on the platform path: a real SQLite store, the demo model over loopback HTTP, an in-memory adapter.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AgentCache } from '../../../src/domain/agents/agent-cache.js';
import { DEFAULT_LIMITS } from '../../../src/domain/agents/cache-policy.js';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
import { ModelClient } from '../../../src/runtime/model/client.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { closeGround, openGround } from '../../fixtures/memory-gateway.js';
import { requestBodies } from '../../fixtures/local-harness.js';

let dir: string;
let store: SqliteSessionStore;
let demo: DemoModelServer;
let gateway: MessagingGateway;
let adapter: MemoryAdapter;
let agents: AgentCache;

beforeEach(async () => {
  ({ dir, store, model: demo } = await openGround('gatehouse-resume-'));
  agents = new AgentCache({ source: store, limits: DEFAULT_LIMITS });
  gateway = new MessagingGateway({
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    model: new ModelClient({ baseUrl: demo.baseUrl, model: 'gatehouse-demo', retry: { maxRetries: 0 } }),
    tools: [],
    prompts: new PromptBroker(),
    cwd: dir,
    typingIntervalMs: 60_000,
    agents,
  });
  adapter = new MemoryAdapter('irc', true);
  gateway.addAdapter(adapter);
  await gateway.start();
});

afterEach(() => closeGround({ dir, store, model: demo }, gateway));

let nextMessage = 1;
const chat = (id: string) => ({ chat_id: id, chat_type: 'dm' as const, user_id: `u-${id}` });

async function say(id: string, text: string): Promise<string> {
  const before = adapter.sent.filter((s) => s.chatId === id).length;
  adapter.receive({ ...chat(id), message_id: String(nextMessage++) }, text);
  await gateway.whenIdle();
  const sent = adapter.sent.filter((s) => s.chatId === id);
  expect(sent.length).toBeGreaterThan(before);
  return sent.at(-1)!.text;
}

async function currentSession(id: string): Promise<string> {
  const entries = (await store.listSessions()).entries;
  return entries.find((e) => e.session_key.endsWith(`:dm:${id}`))!.session_id;
}

const users = () =>
  (JSON.parse(requestBodies(demo).at(-1)!) as { messages: { role: string; content: string }[] }).messages
    .filter((m) => m.role === 'user')
    .map((m) => m.content);

describe('/resume <id> on chat platforms', () => {
  it('goes back to an earlier conversation of the chat; the model sees its history, not the cached one', async () => {
    await say('a', 'first conversation');
    const first = await currentSession('a');
    expect(await say('a', '/new')).toBe('Started a new conversation.');
    await say('a', 'second conversation');
    expect(users()).toEqual(['second conversation']);
    expect(agents.stats().hits).toBe(0);

    expect(await say('a', `/resume ${first}`)).toBe(`Resumed conversation ${first}.`);
    await say('a', 'back in the first');
    expect(users()).toEqual(['first conversation', 'back in the first']);
    expect(await say('a', `/resume ${first}`)).toBe(`Already in conversation ${first}.`);
  });

  it("another chat's conversation is answered like an unknown one, and nothing changes", async () => {
    await say('b', 'bob speaks');
    const bobs = await currentSession('b');
    await say('a', 'alice speaks');
    expect(await say('a', `/resume ${bobs}`)).toBe(`This chat has no conversation ${bobs}.`);
    expect(await say('a', '/resume 20200101_000000_00000000')).toBe(
      'This chat has no conversation 20200101_000000_00000000.',
    );
    await say('a', 'still alice');
    expect(users()).toEqual(['alice speaks', 'still alice']);
  });
});
