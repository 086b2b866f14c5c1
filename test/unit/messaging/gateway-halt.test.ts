/**
 * MessagingGateway.halt (SCL-1): the instance lost its bots' leases, so its store refuses every
 * write (the fence, stood in for here by a ledger that throws BotLeaseLost once `fenced`). The
 * running turn is aborted, nothing reaches the chat from this gateway, no clean-shutdown marker is
 * attempted, and the next gateway on the same store (the instance that took the bots over) finishes
 * the turn once.
 */
import { afterEach, beforeEach, expect, it } from 'vitest';
import { NotConfirmable } from '../../../src/domain/messaging/adapter.js';
import { DEMO_LABEL } from '../../../src/runtime/demo/script.js';
import { BotLeaseLost } from '../../../src/domain/ports/cluster-store.js';
import type { DeliveryLedger } from '../../../src/domain/ports/delivery-ledger.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import { resumedNotice } from '../../../src/domain/messaging/turn.js';
import {
  closeGround,
  openGround,
  startMemoryGateway,
  type GatewayGround,
} from '../../fixtures/memory-gateway.js';

let ground: GatewayGround;
let next: MessagingGateway | undefined;

beforeEach(async () => {
  ground = await openGround('gatehouse-gw-halt-');
});

afterEach(async () => {
  await closeGround(ground, next);
  next = undefined;
});

/** The real SQLite ledger; once `fenced`, every method but the reads throws, as the bot fence does. */
function fencedLedger(real: DeliveryLedger, state: { fenced: boolean; refused: string[] }): DeliveryLedger {
  const reads = new Set([
    'isInboundTaken',
    'inboundOutcome',
    'listBacklog',
    'readDelivery',
    'listUndelivered',
  ]);
  return new Proxy(real, {
    get(target, name, receiver) {
      const value: unknown = Reflect.get(target, name, receiver);
      if (typeof value !== 'function') return value;
      const method = (value as (...a: unknown[]) => unknown).bind(target);
      if (reads.has(String(name))) return method;
      return (...args: unknown[]) => {
        if (!state.fenced) return method(...args);
        state.refused.push(String(name));
        return Promise.reject(new BotLeaseLost('irc:test'));
      };
    },
  });
}

const CHAT = { chat_id: 'room', chat_type: 'dm' as const, user_id: 'u1' };

it('halt aborts the running turn, sends nothing and writes no clean-shutdown; the next holder answers once', async () => {
  const { store, model } = ground;
  const state = { fenced: false, refused: [] as string[] };
  const ledger = new SqliteDeliveryLedger(store.db);
  const { gateway, adapter } = await startMemoryGateway({
    store,
    ledger: fencedLedger(ledger, state),
    modelBaseUrl: model.baseUrl,
    cwd: ground.dir,
  });
  const started = gateway.events.next('turn:start');
  model.hold();
  adapter.receive({ ...CHAT, message_id: '1' }, 'hello');
  await started;
  await model.waitForRequests(1);

  state.fenced = true; // the lease is gone: the store refuses this instance from now on
  await gateway.halt();
  model.release();
  expect(gateway.lifecycleState).toBe('stopped');
  expect(adapter.status().state).toBe('stopped');
  expect(adapter.sent).toEqual([]);
  // A stop after the halt is the halt: no drain, no clean-shutdown marker attempted.
  await gateway.stop({ timeoutMs: 1000 });
  expect(state.refused).not.toContain('writeCleanShutdown');
  expect(adapter.sent).toEqual([]);

  // The instance that takes the bots over: a fresh gateway on the same store.
  const taken = await startMemoryGateway({ store, ledger, modelBaseUrl: model.baseUrl, cwd: ground.dir });
  next = taken.gateway;
  const answered = taken.gateway.events.next('delivery:sent', (e) => e.delivery.text.includes('hello'));
  await answered;
  expect(taken.adapter.sent.map((s) => s.text)).toEqual([
    resumedNotice('model', false),
    `${DEMO_LABEL}: you said: hello`,
  ]);
});

it('the sink rejects NotConfirmable once confirmations are refused, so the adapter confirms nothing', async () => {
  const { store, model } = ground;
  let confirmable = true;
  const { gateway, adapter } = await startMemoryGateway({
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    modelBaseUrl: model.baseUrl,
    cwd: ground.dir,
  });
  next = gateway;
  gateway.guardConfirmations(() => confirmable);
  await expect(
    adapter.handIn({ ...CHAT, message_id: '1' }, 'taken and confirmable'),
  ).resolves.toBeUndefined();
  confirmable = false; // e.g. the bot fence refused a write: the lease is going
  await expect(adapter.handIn({ ...CHAT, message_id: '2' }, 'not confirmable')).rejects.toBeInstanceOf(
    NotConfirmable,
  );
});
