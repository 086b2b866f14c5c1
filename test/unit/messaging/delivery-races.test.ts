/**
 * Two paths send ledger obligations: the turn that recorded the reply, and sweeps (start-up, and
 * retries after a failed send). Whatever their interleaving, each reply reaches the chat exactly
 * once. Real SQLite ledger; an adapter whose sends complete when the test (or fast-check's
 * scheduler) says so.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TypedEmitter } from '../../../src/domain/events/typed-emitter.js';
import type { OutboundOptions, SentMessage } from '../../../src/domain/messaging/adapter.js';
import type { Delivery } from '../../../src/domain/ports/delivery-ledger.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { Deliverer } from '../../../src/domain/messaging/delivery.js';
import type { MessagingEvents } from '../../../src/domain/messaging/events.js';
import { MemoryAdapter } from '../../fixtures/memory-adapter.js';

/** Sends wait at a gate (per chat) until opened. */
class GatedAdapter extends MemoryAdapter {
  private readonly gates = new Map<string, { promise: Promise<void>; open: () => void }>();
  constructor() {
    super('telegram', true);
  }
  close(chatId: string): void {
    let open!: () => void;
    const promise = new Promise<void>((resolve) => (open = resolve));
    this.gates.set(chatId, { promise, open });
  }
  open(chatId: string): void {
    this.gates.get(chatId)?.open();
    this.gates.delete(chatId);
  }
  override async send(chatId: string, text: string, options: OutboundOptions): Promise<SentMessage[]> {
    await this.gates.get(chatId)?.promise;
    return super.send(chatId, text, options);
  }
}

let dir: string;
let store: SqliteSessionStore;
let ledger: SqliteDeliveryLedger;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-deliveries-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function openLedger(name = 'state.db'): void {
  store = SqliteSessionStore.open(path.join(dir, name));
  ledger = new SqliteDeliveryLedger(store.db);
}

const record = (turnId: string, chatId: string, text: string): Promise<Delivery> =>
  ledger.recordReply({
    turnId,
    sessionKey: `agent:main:telegram:dm:${chatId}`,
    sessionId: `s-${chatId}`,
    target: { platform: 'telegram', chat_id: chatId, thread_id: null, reply_to: null },
    text,
    silent: false,
  });

describe('REC-4 one reply, one send, whichever path gets there', () => {
  let adapter: GatedAdapter;
  let deliverer: Deliverer;
  beforeEach(() => {
    openLedger();
    adapter = new GatedAdapter();
    deliverer = new Deliverer(ledger, () => adapter, new TypedEmitter<MessagingEvents>());
  });
  afterEach(() => store.close());
  const texts = () => adapter.sent.map((s) => s.text);

  it('a sweep while the turn is sending the reply does not send it again', async () => {
    const reply = await record('t1', 'c1', 'one');
    adapter.close('c1');
    const own = deliverer.deliver(reply);
    const swept = deliverer.sweep({ recovered: false });
    await tick();
    adapter.open('c1');
    expect(await own).toBe(true);
    await swept;
    expect(texts()).toEqual(['one']);
    expect(await ledger.listUndelivered()).toEqual([]);
  });

  it('a reply its turn delivered after the sweep listed it is not sent again', async () => {
    const first = await record('t1', 'c1', 'one');
    const second = await record('t2', 'c2', 'two');
    void first;
    adapter.close('c1'); // the sweep is held sending `one`…
    const swept = deliverer.sweep({ recovered: false });
    await tick();
    expect(await deliverer.deliver(second)).toBe(true); // …while `two` goes out by its turn
    adapter.open('c1');
    expect(await swept).toBe(1);
    expect(texts().sort()).toEqual(['one', 'two']);
  });

  it('a sweep between recording a reply and its turn sending it leaves the reply to the turn', async () => {
    const release = deliverer.reserve('t1');
    const reply = await record('t1', 'c1', 'one');
    expect(await deliverer.sweep({ recovered: false })).toBe(0);
    expect(texts()).toEqual([]);
    await deliverer.deliver(reply);
    release();
    await deliverer.sweep({ recovered: false });
    expect(texts()).toEqual(['one']);
  });

  it('a reply whose turn failed to send it is the sweeps’ again once the turn let go', async () => {
    const release = deliverer.reserve('t1');
    const reply = await record('t1', 'c1', 'one');
    const send = adapter.send.bind(adapter);
    adapter.send = () => Promise.reject(new Error('network down'));
    expect(await deliverer.deliver(reply)).toBe(false);
    adapter.send = send;
    expect(await deliverer.sweep({ recovered: false })).toBe(0); // still the turn's
    release();
    expect(await deliverer.sweep({ recovered: false })).toBe(1);
    expect(texts()).toEqual(['one']);
  });
});

describe('REC-4 property: any interleaving of turns, sweeps and failed sends', () => {
  it('sends every reply exactly once', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 3 }),
        fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
        async (s, replies, sweeps, failFirst) => {
          openLedger(`p${run++}.db`);
          const delivered: string[] = [];
          const attempts = new Map<string, number>();
          const adapter = new MemoryAdapter('telegram', true);
          adapter.send = s.scheduleFunction(function send(chatId: string, text: string) {
            const n = (attempts.get(text) ?? 0) + 1;
            attempts.set(text, n);
            if (n === 1 && failFirst[Number(chatId)]) return Promise.reject(new Error('send failed'));
            delivered.push(text);
            return Promise.resolve([{ message_id: text }]);
          });
          const deliverer = new Deliverer(ledger, () => adapter, new TypedEmitter<MessagingEvents>());
          // A turn as executeTurn does it: reserve, record, bookkeeping, deliver, release.
          const turn = async (i: number) => {
            await s.schedule(Promise.resolve(), `turn ${i} ends`);
            const release = deliverer.reserve(`t${i}`);
            try {
              const reply = await record(`t${i}`, String(i), `reply ${i}`);
              await s.schedule(Promise.resolve(), `turn ${i} bookkeeping`);
              await deliverer.deliver(reply);
            } finally {
              release();
            }
          };
          const sweep = async (j: number) => {
            await s.schedule(Promise.resolve(), `sweep ${j}`);
            await deliverer.sweep({ recovered: false });
          };
          const work = Promise.all([
            ...Array.from({ length: replies }, (_, i) => turn(i)),
            ...Array.from({ length: sweeps }, (_, j) => sweep(j)),
          ]);
          await settle(s, work);
          // The retry that follows failed sends: it finds exactly the replies still owed.
          await settle(s, deliverer.sweep({ recovered: false }));
          await store.close();
          expect(delivered.sort()).toEqual(Array.from({ length: replies }, (_, i) => `reply ${i}`).sort());
        },
      ),
      { numRuns: 150 },
    );
    // 150 runs each open a fresh SQLite ledger: seconds alone, far longer on a loaded machine.
  }, 180_000);
});

/** Lets the scheduler run tasks (and the microtasks between them) until `work` settles. */
async function settle(s: fc.Scheduler, work: Promise<unknown>): Promise<void> {
  let done = false;
  const finished = work.finally(() => (done = true));
  while (!done) {
    if (s.count() > 0) await s.waitOne();
    else await tick();
  }
  await finished;
}
