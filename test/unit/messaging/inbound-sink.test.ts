/**
 * The InboundSink contract: the promise an adapter gets resolves only once the gateway has taken
 * the event durably (so the adapter may then acknowledge it to its platform), and no later than
 * that: a turn takes its message when it starts, not when it ends. Events parked during start-up
 * recovery are admitted by the next start. A real SQLite store, the demo model over loopback HTTP
 * (held, so a turn is running), an in-memory adapter.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SessionSource } from '../../../src/domain/session/source.js';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import type { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import { PARKED_KEY, Parking } from '../../../src/domain/messaging/parking.js';
import type { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { closeGround, openGround, startMemoryGateway } from '../../fixtures/memory-gateway.js';

let dir: string;
let store: SqliteSessionStore;
let ledger: SqliteDeliveryLedger;
let model: DemoModelServer;
let gateway: MessagingGateway;
let adapter: MemoryAdapter;

beforeEach(async () => {
  ({ dir, store, model } = await openGround('gatehouse-sink-'));
  ledger = new SqliteDeliveryLedger(store.db);
});
afterEach(() => closeGround({ dir, store, model }, gateway));

async function startGateway(): Promise<void> {
  ({ gateway, adapter } = await startMemoryGateway({ store, ledger, modelBaseUrl: model.baseUrl, cwd: dir }));
}

const chat = (id: string) => ({ chat_id: id, chat_type: 'dm' as const, user_id: `u-${id}` });
const ref = (id: string, messageId: string) => ({ platform: 'irc', chat_id: id, message_id: messageId });
const backlogTexts = (key: string) =>
  store.db
    .prepare(
      `SELECT json_extract(event, '$.text') FROM inbound_backlog WHERE session_key = ? ORDER BY position`,
    )
    .pluck()
    .all(key);
const answersTo = (id: string) =>
  adapter.sent
    .filter((s) => s.chatId === id && s.text.includes('you said: '))
    .map((s) => s.text.replace(/^.*you said: /s, ''));

describe('the InboundSink resolves once the event is taken', () => {
  it('a message that starts a turn is taken (in-flight marker) before the promise resolves, while the turn still runs', async () => {
    await startGateway();
    model.hold();
    await adapter.handIn({ ...chat('a'), message_id: '1' }, 'first');
    expect(await ledger.inboundOutcome(ref('a', '1'))).toBe('turn');
    // The model holds the turn: the promise did not wait for it to end.
    expect(answersTo('a')).toEqual([]);
    model.release();
    await gateway.whenIdle();
    expect(answersTo('a')).toEqual(['first']);
  });

  it('a message that has to wait has its backlog row before the promise resolves', async () => {
    await startGateway();
    model.hold();
    await adapter.handIn({ ...chat('b'), message_id: '1' }, 'running');
    await model.waitForRequests(1);
    await adapter.handIn({ ...chat('b'), message_id: '2' }, 'waiting');
    expect(await ledger.inboundOutcome(ref('b', '2'))).toBe('waiting');
    expect(
      store.db.prepare(`SELECT count(*) FROM inbound_backlog WHERE event LIKE '%"waiting"%'`).pluck().get(),
    ).toBe(1);
    model.release();
    await gateway.whenIdle();
    expect(answersTo('b')).toEqual(['running', 'waiting']);
  });

  it('a redelivery and a command resolve too, once recorded', async () => {
    await startGateway();
    await adapter.handIn({ ...chat('c'), message_id: '1' }, 'hello');
    await adapter.handIn({ ...chat('c'), message_id: '1' }, 'hello');
    await adapter.handIn({ ...chat('c'), message_id: '2' }, '/status');
    expect(await ledger.inboundOutcome(ref('c', '2'))).toBe('command');
    await gateway.whenIdle();
    expect(answersTo('c')).toEqual(['hello']);
  });
});

describe('events parked during start-up recovery', () => {
  const parkedEvent = (id: string, messageId: string, text: string) => ({
    source: new SessionSource({ ...chat(id), platform: 'irc', message_id: messageId }),
    text,
    internal: false,
    received_at: new Date().toISOString(),
  });

  it('what a crashed start left parked is admitted by the next one, in order, once each, and its rows go', async () => {
    // The state a SIGKILL during recovery leaves: two events parked, one of them already taken
    // (its admission had started its turn when the process died).
    const parking = new Parking(ledger, (e) => ({
      platform: 'irc',
      chat_id: e.source.chat_id,
      message_id: e.source.message_id!,
    }));
    await parking.load();
    expect(await parking.park(parkedEvent('p', '1', 'parked one'))).toBe(true);
    expect(await parking.park(parkedEvent('p', '2', 'parked two'))).toBe(true);
    expect(await parking.park(parkedEvent('q', '1', 'already taken'))).toBe(true);
    // A redelivery of a parked event is recognised and not parked twice.
    expect(await parking.park(parkedEvent('p', '1', 'parked one'))).toBe(false);
    const key = 'agent:main:irc:dm:q';
    const session = await store.getOrCreateSession(
      key,
      new SessionSource({ ...chat('q'), platform: 'irc' }).toJSON(),
    );
    await ledger.startTurn(key, ref('q', '1'));
    await ledger.recordReply({
      turnId: 'msg_taken',
      sessionKey: key,
      sessionId: session.entry.session_id,
      target: { platform: 'irc', chat_id: 'q', thread_id: null, reply_to: null },
      text: 'answered before the crash',
      silent: false,
    });
    expect(backlogTexts(PARKED_KEY)).toEqual(['parked one', 'parked two', 'already taken']);

    await startGateway();
    await gateway.whenIdle();
    expect(answersTo('p')).toEqual(['parked one', 'parked two']);
    expect(answersTo('q')).toEqual([]);
    expect(backlogTexts(PARKED_KEY)).toEqual([]);
  });
});
