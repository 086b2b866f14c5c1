/**
 * Lanes live only while they have work, and a turn that fails inside the gateway answers through
 * the delivery ledger. A real SQLite store, the demo model over loopback HTTP, an in-memory adapter.
 */
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { inProcessDemoModel } from '../../../src/runtime/demo/model.js';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
import type { ChatModel, ChatRequest, ChatResult } from '../../../src/runtime/model/client.js';
import { ModelError } from '../../../src/runtime/model/errors.js';
import type { SessionStore } from '../../../src/domain/ports/session-store.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import type { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import type { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { closeGround, openGround, startMemoryGateway } from '../../fixtures/memory-gateway.js';

let dir: string;
let store: SqliteSessionStore;
let model: DemoModelServer;
let gateway: MessagingGateway;
let adapter: MemoryAdapter;

beforeEach(async () => {
  ({ dir, store, model } = await openGround('gatehouse-gw-lanes-'));
});
afterEach(() => closeGround({ dir, store, model }, gateway));

async function startGateway(over: SessionStore = store, chatModel?: ChatModel): Promise<void> {
  ({ gateway, adapter } = await startMemoryGateway({
    store: over,
    ledger: new SqliteDeliveryLedger(store.db),
    modelBaseUrl: model.baseUrl,
    ...(chatModel === undefined ? {} : { model: chatModel }),
    cwd: dir,
  }));
}

let nextMessage = 1;
const chat = (id: string) => ({ chat_id: id, chat_type: 'dm' as const, user_id: `u-${id}` });
const say = (id: string, text: string) =>
  adapter.receive({ ...chat(id), message_id: String(nextMessage++) }, text);
const textsTo = (id: string) => adapter.sent.filter((s) => s.chatId === id).map((s) => s.text);
const answersTo = (id: string) =>
  textsTo(id)
    .filter((t) => t.includes('you said: '))
    .map((t) => t.replace(/^.*you said: /s, ''));

describe('per-chat lanes are freed when idle', () => {
  it('after many chats each finish, no lane is left', async () => {
    await startGateway();
    const chats = Array.from({ length: 120 }, (_, i) => `chat-${i}`);
    const sent = new Promise<void>((resolve) => {
      let n = 0;
      gateway.events.on('delivery:sent', () => {
        if (++n === chats.length) resolve();
      });
    });
    for (const id of chats) say(id, `hello ${id}`);
    await sent;
    await gateway.whenIdle();
    expect(gateway.laneCount).toBe(0);
    for (const id of chats) expect(answersTo(id)).toEqual([`hello ${id}`]);

    // A command on an idle chat makes a lane for as long as it is carried out, and no longer.
    say('chat-0', '/status');
    await gateway.events.next('command:handled');
    await gateway.whenIdle();
    expect(gateway.laneCount).toBe(0);
  });

  it('a lane with work is kept, and order, /stop and /new still hold across freed lanes', async () => {
    await startGateway();
    model.hold();
    say('a', 'first');
    await model.waitForRequests(1);
    say('a', 'follow-up');
    say('a', '/queue queued');
    await gateway.events.next('command:handled', (e) => e.command === 'queue');
    say('b', 'other chat');
    await model.waitForRequests(2);
    expect(gateway.laneCount).toBe(2);
    model.release();
    await gateway.whenIdle();
    expect(gateway.laneCount).toBe(0);
    expect(answersTo('a')).toEqual(['first', 'follow-up', 'queued']);

    // The lane was freed; the chat's conversation was not: the next turn sees the earlier ones.
    say('a', 'after the lane was freed');
    await gateway.events.next('delivery:sent');
    const last = model.requests.at(-1)!.body!.messages!.map((m) => m.content);
    expect(last).toEqual(expect.arrayContaining(['first', 'queued', 'after the lane was freed']));

    // /stop on a chat with nothing running answers so, and frees its lane again.
    await gateway.whenIdle();
    say('a', '/stop');
    await gateway.events.next('command:handled', (e) => e.command === 'stop');
    await gateway.whenIdle();
    expect(textsTo('a').at(-1)).toBe('Nothing is running.');
    expect(gateway.laneCount).toBe(0);

    // /new on a freed lane still starts a fresh conversation.
    say('a', '/new');
    await gateway.events.next('command:handled', (e) => e.command === 'new');
    say('a', 'fresh');
    await gateway.events.next('delivery:sent');
    expect(model.requests.at(-1)!.body!.messages!.map((m) => m.content)).not.toContain('first');
    await gateway.whenIdle();
    expect(gateway.laneCount).toBe(0);
  });
});

describe('a turn that fails inside the gateway', () => {
  it('answers "Sorry, something went wrong" through the delivery ledger: recorded, sent once, marked delivered', async () => {
    // The real store, except that loading a transcript fails (before the turn takes its message).
    const failing = new Proxy(store, {
      get(target, name, receiver) {
        if (name === 'loadTranscript' || name === 'loadTranscriptTail')
          return () => Promise.reject(new Error('disk on fire\nstack…'));
        const value: unknown = Reflect.get(target, name, receiver);
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    await startGateway(failing);
    const sent: { text: string; recovered: boolean }[] = [];
    gateway.events.on('delivery:sent', (e) => sent.push({ text: e.delivery.text, recovered: e.recovered }));
    const complete = gateway.events.next('turn:complete');
    const marked = gateway.events.next('delivery:sent');
    say('c', 'hello');
    // The failure is reported complete once its notice went out; its mark follows in a group commit.
    expect((await complete).outcome).toBe('failed');
    await marked;
    expect(sent).toEqual([{ text: 'Sorry, something went wrong: disk on fire', recovered: false }]);
    expect(textsTo('c')).toEqual(['Sorry, something went wrong: disk on fire']);
    const rows = store.db.prepare('SELECT text, delivered_at FROM delivery_ledger').all() as {
      text: string;
      delivered_at: string | null;
    }[];
    expect(rows).toEqual([
      { text: 'Sorry, something went wrong: disk on fire', delivered_at: expect.any(String) as string },
    ]);
    // The chat has its answer: nothing is left in flight to resume after a restart.
    expect(store.db.prepare('SELECT count(*) FROM turn_markers').pluck().get()).toBe(0);
  });
});

/**
 * The demo model in process, except that each request waits until the test lets it finish (or the
 * turn is interrupted). Requests are told apart by chat: every text the test sends starts `<chat>-`.
 */
class ParkedModel implements ChatModel {
  private readonly demo = inProcessDemoModel();
  private readonly parked: { chat: string; go: () => void }[] = [];
  /** Chats with a request in progress: two at once for one chat would break one-turn-per-key. */
  readonly active = new Set<string>();
  readonly violations: string[] = [];
  private flowing = false;

  complete(request: ChatRequest): Promise<ChatResult> {
    const last = [...request.messages].reverse().find((m) => m.role === 'user');
    const chat = String(last?.content ?? '').split('-')[0]!;
    if (this.active.has(chat)) this.violations.push(`two turns at once on chat ${chat}`);
    this.active.add(chat);
    return new Promise<void>((resolve, reject) => {
      const signal = request.signal;
      const entry = { chat, go: resolve };
      const abort = () => {
        const at = this.parked.indexOf(entry);
        if (at >= 0) this.parked.splice(at, 1);
        reject(new ModelError('cancelled', 'The model request was cancelled.'));
      };
      if (signal?.aborted) return abort();
      signal?.addEventListener('abort', abort, { once: true });
      if (this.flowing) resolve();
      else this.parked.push(entry);
    })
      .then(() => this.demo.complete(request))
      .finally(() => this.active.delete(chat));
  }

  /** Lets the oldest request of `chat` finish; false when it has none waiting. */
  finish(chat: string): boolean {
    const at = this.parked.findIndex((p) => p.chat === chat);
    if (at < 0) return false;
    this.parked.splice(at, 1)[0]!.go();
    return true;
  }

  /** From now on nothing waits. */
  flow(): void {
    this.flowing = true;
    for (const p of this.parked.splice(0)) p.go();
  }
}

type LaneOp = { chat: 'a' | 'b'; op: 'send' | 'queue' | 'stop' | 'new' | 'finish' };

describe('lanes freed and made again keep the queue rules (property)', () => {
  it('for any interleaving: one turn per chat, /queue items once and in order, no lane left', async () => {
    const opArb: fc.Arbitrary<LaneOp> = fc.record({
      chat: fc.constantFrom('a' as const, 'b' as const),
      op: fc.constantFrom(
        'send' as const,
        'queue' as const,
        'stop' as const,
        'new' as const,
        'finish' as const,
        'finish' as const,
      ),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 30 }), async (ops) => {
        const parked = new ParkedModel();
        await startGateway(store, parked);
        const queued: Record<string, number[]> = { a: [], b: [] };
        let id = 0;
        for (const { chat: c, op } of ops) {
          if (op === 'finish') {
            if (parked.finish(c)) await gateway.events.next('turn:complete');
            continue;
          }
          const n = id++;
          const text = op === 'send' ? `${c}-m${n}` : op === 'queue' ? `/queue ${c}-q${n}` : `/${op}`;
          if (op === 'queue') queued[c]!.push(n);
          // /new drops what waits and /stop what runs (a /queue item too, once it started): items
          // sent before either may or may not run; every item sent after the last one must.
          if (op === 'new' || op === 'stop') queued[c] = [];
          const handled =
            op === 'send'
              ? gateway.events.next('inbound:accepted', (e) => e.text === text)
              : gateway.events.next('command:handled');
          say(c, text);
          await handled;
        }
        parked.flow();
        await gateway.whenIdle();
        for (const c of ['a', 'b']) {
          const ran = answersTo(c)
            .filter((t) => t.startsWith(`${c}-q`))
            .map((t) => Number(t.slice(3)));
          // In order, never twice; every item sent after the chat's last /stop or /new ran.
          expect(ran).toEqual([...ran].sort((x, y) => x - y));
          expect(new Set(ran).size).toBe(ran.length);
          for (const n of queued[c]!) expect(ran).toContain(n);
        }
        expect(parked.violations).toEqual([]);
        expect(gateway.laneCount).toBe(0);
        expect(store.db.prepare('SELECT count(*) FROM inbound_backlog').pluck().get()).toBe(0);
        await gateway.stop({ timeoutMs: 1000 });
      }),
      { numRuns: 40 },
    );
  });
});
