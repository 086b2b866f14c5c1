/**
 * A chat command that arrives while a turn is only starting (its session still being looked up)
 * must find the turn. The store is the real SQLite store; its session look-up is held at a gate so
 * the window is wide open instead of a few microtasks.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
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
let openGate: () => void;

beforeEach(async () => {
  ({ dir, store, model } = await openGround('gatehouse-gw-races-'));
  const gate = new Promise<void>((resolve) => (openGate = resolve));
  // The real store, but getOrCreateSession answers only once the test opens the gate.
  const slow = new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'getOrCreateSession') {
        return async (...args: Parameters<SessionStore['getOrCreateSession']>) => {
          await gate;
          return target.getOrCreateSession(...args);
        };
      }
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
  ({ gateway, adapter } = await startMemoryGateway({
    store: slow,
    ledger: new SqliteDeliveryLedger(store.db),
    modelBaseUrl: model.baseUrl,
    cwd: dir,
  }));
});

afterEach(async () => {
  openGate();
  await closeGround({ dir, store, model }, gateway);
});

const CHAT = { chat_id: 'room', chat_type: 'dm' as const, user_id: 'u1' };

it('QUE-2 /stop while a turn is still looking up its session stops it before it runs', async () => {
  const accepted = gateway.events.next('inbound:accepted', (e) => e.text === 'hello');
  adapter.receive({ ...CHAT, message_id: '1' }, 'hello');
  await accepted; // the turn is launched and waits for its session
  const handled = gateway.events.next('command:handled', (e) => e.command === 'stop');
  const done = gateway.events.next('turn:complete');
  adapter.receive({ ...CHAT, message_id: '2' }, '/stop');
  await handled;
  openGate();
  expect((await done).outcome).toBe('interrupted');
  expect(adapter.sent.map((s) => s.text)).toEqual(['Stopped.']);
  expect(model.requests).toEqual([]);
  // Nothing of the stopped message was stored, and no turn is left marked in flight.
  expect(store.db.prepare('SELECT count(*) FROM messages').pluck().get()).toBe(0);
  expect(store.db.prepare('SELECT count(*) FROM turn_markers').pluck().get()).toBe(0);
});
