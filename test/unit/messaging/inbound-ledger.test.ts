/**
 * The inbound ledger: a platform message taken by a turn or a command is recorded, so a redelivery
 * after a crash (Telegram hands an update out again until a later getUpdates confirms it) is
 * dropped. Storage on a real SQLite file; the gateway through the Telegram stand-in, with the
 * process "killed" by cutting polling and the database connection.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../../src/domain/errors.js';
import { inboundRefOf, type InboundRef } from '../../../src/domain/messaging/adapter.js';
import { SessionSource } from '../../../src/domain/session/source.js';
import { INBOUND_RETENTION_SECONDS } from '../../../src/domain/ports/delivery-ledger.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { ALICE, createHarness, dmWith, type Harness } from '../../fixtures/messaging-harness.js';

const REF: InboundRef = { platform: 'telegram', chat_id: '111', message_id: '1000' };
const KEY = 'agent:main:telegram:dm:111';

describe('inboundRefOf', () => {
  const source = (message_id: string | null) =>
    new SessionSource({ platform: 'telegram', chat_id: ' +111 ', chat_type: 'dm', message_id });
  const event = (message_id: string | null, internal = false) => ({
    source: source(message_id),
    text: 'x',
    internal,
    received_at: new Date().toISOString(),
  });
  const normalize = (id: string) => String(Number(id.trim()));

  it('names a human message by platform, normalised chat id and message id', () => {
    expect(inboundRefOf(event('1000'), normalize)).toEqual(REF);
  });

  it('gives none to a wake-up or a message without a platform id', () => {
    expect(inboundRefOf(event('1000', true), normalize)).toBeNull();
    expect(inboundRefOf(event(null), normalize)).toBeNull();
  });
});

describe('SqliteDeliveryLedger inbound records', () => {
  let dir: string;
  let store: SqliteSessionStore;
  let ledger: SqliteDeliveryLedger;
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  async function open(): Promise<void> {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-inbound-'));
    store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    ledger = new SqliteDeliveryLedger(store.db);
    const origin = new SessionSource({ platform: 'telegram', chat_id: '111', chat_type: 'dm' });
    await store.getOrCreateSession(KEY, origin.toJSON());
  }
  const markers = () => store.db.prepare('SELECT session_key FROM turn_markers').pluck().all();

  it('startTurn sets the marker and takes the message in one transaction', async () => {
    await open();
    expect(await ledger.isInboundTaken(REF)).toBe(false);
    await ledger.startTurn(KEY, REF);
    expect(markers()).toEqual([KEY]);
    expect(await ledger.isInboundTaken(REF)).toBe(true);
    // Another chat's message with the same id is another message.
    expect(await ledger.isInboundTaken({ ...REF, chat_id: '222' })).toBe(false);

    // No session on the key: neither the marker nor the record is written.
    const other = { ...REF, message_id: '1001' };
    await expect(ledger.startTurn('agent:main:telegram:dm:999', other)).rejects.toBeInstanceOf(NotFoundError);
    expect(await ledger.isInboundTaken(other)).toBe(false);
    expect(markers()).toEqual([KEY]);
  });

  it('takeInbound is idempotent, and a turn of an already-taken message still starts', async () => {
    await open();
    await ledger.takeInbound(REF, KEY);
    await ledger.takeInbound(REF, KEY);
    await ledger.startTurn(KEY, REF);
    expect(store.db.prepare('SELECT count(*) FROM inbound_ledger').pluck().get()).toBe(1);
    expect(markers()).toEqual([KEY]);
  });

  it('start-up recovery forgets records older than the retention, keeps the rest', async () => {
    await open();
    const now = new Date('2026-05-10T12:00:00Z');
    const old = { ...REF, message_id: 'old' };
    await ledger.takeInbound(old, KEY, {
      now: new Date(now.getTime() - (INBOUND_RETENTION_SECONDS + 60) * 1000),
    });
    await ledger.takeInbound(REF, KEY, { now: new Date(now.getTime() - 3600_000) });
    await ledger.recover({ maxAgeSeconds: 86_400, now });
    expect(await ledger.isInboundTaken(old)).toBe(false);
    expect(await ledger.isInboundTaken(REF)).toBe(true);
  });
});

describe('the gateway drops a redelivered message after a crash', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.dispose();
  });

  /** Kills the stack, has Telegram hand the updates out again, starts a new one; returns what it dropped. */
  async function crashAndRedeliver(...updateIds: number[]): Promise<unknown[]> {
    await h.crash();
    for (const id of updateIds) h.standIn.redeliver(id);
    h.build();
    const dropped: unknown[] = [];
    h.gateway.events.on('inbound:duplicate', (e) => dropped.push(e));
    await h.start();
    return dropped;
  }

  it('a command is not carried out twice: /undo redelivered undoes nothing more', async () => {
    h = await createHarness();
    h.build();
    await h.start();
    for (const text of ['one', 'two']) {
      h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text });
      await h.waitForText(ALICE.id, new RegExp(`you said: ${text}$`));
    }
    const undo = h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/undo' });
    await h.waitForText(ALICE.id, /^Undid/);
    const sessionId = (await h.store.listSessions()).entries[0]!.session_id;
    expect(await h.store.loadTranscript(sessionId)).toHaveLength(2);

    const dropped = await crashAndRedeliver(undo);
    // Inbound is admitted in order: once /status is handled, the redelivered /undo was judged.
    const status = h.gateway.events.next('command:handled', (e) => e.command === 'status');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/status' });
    await status;
    expect(dropped).toEqual([
      { platform: 'telegram', chat_id: String(ALICE.id), message_id: expect.any(String) as string },
    ]);
    expect(await h.store.loadTranscript(sessionId)).toHaveLength(2);
    expect(h.textsTo(ALICE.id).filter((t) => t.startsWith('Undid'))).toHaveLength(1);
  });

  it('a /queue item whose turn never started runs once after the crash, not again for its redelivery', async () => {
    h = await createHarness();
    h.build();
    await h.start();
    h.model.hold();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'busy' });
    await h.model.waitForRequests(1);
    const queued = h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: '/queue later please' });
    await h.waitForText(ALICE.id, /^Queued/);
    // It waited on the backlog, taken with its row: the backlog runs it, the redelivery is dropped.
    const dropped = await crashAndRedeliver(queued);
    h.model.release();
    await h.waitForText(ALICE.id, /you said: later please$/);
    // The interrupted turn was resumed at its model call (one reply), the /queue item ran once after it.
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'last' });
    await h.waitForText(ALICE.id, /you said: last$/);
    const answers = h.textsTo(ALICE.id).filter((t) => t.includes('you said'));
    expect(answers.map((t) => t.replace(/^.*you said: /s, ''))).toEqual(['busy', 'later please', 'last']);
    expect(dropped).toEqual([
      { platform: 'telegram', chat_id: String(ALICE.id), message_id: h.standIn.messageId(queued) },
    ]);
  });
});
