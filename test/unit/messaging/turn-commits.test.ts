/**
 * What a chat turn commits, and that its writes are fused (STO-1, REC-4): the input message commits
 * with the in-flight marker, and the final answer with its reply row, the marker's drop and the
 * usage. A failure inside either transaction (a fault armed in the ledger) leaves none of its
 * writes, so no crash can fall between them either; it rejects only its own chat's operation.
 * A real SQLite store, the demo model over loopback HTTP, an in-memory adapter.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DemoModelServer } from '../../../src/runtime/demo/server.js';
import { CommitGroup } from '../../../src/storage/sqlite/commit-group.js';
import { SqliteDeliveryLedger, type LedgerFaults } from '../../../src/storage/sqlite/delivery-ledger.js';
import type { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import type { MessagingGateway } from '../../../src/domain/messaging/gateway.js';
import type { MemoryAdapter } from '../../fixtures/memory-adapter.js';
import { closeGround, openGround, startMemoryGateway } from '../../fixtures/memory-gateway.js';

let dir: string;
let store: SqliteSessionStore;
let model: DemoModelServer;
let gateway: MessagingGateway;
let adapter: MemoryAdapter;
/** Chats whose transaction at `point` throws (the store refusing it from within). */
const failing = new Map<string, 'startTurn.transaction' | 'endTurn.transaction'>();
const faults: LedgerFaults = {
  hit(point, sessionKey) {
    if ([...failing].some(([chat, p]) => p === point && sessionKey.endsWith(`:${chat}`)))
      throw new Error(`fault at ${point}`);
  },
};

beforeEach(async () => {
  ({ dir, store, model } = await openGround('gatehouse-turn-commits-'));
  failing.clear();
  ({ gateway, adapter } = await startMemoryGateway({
    store,
    ledger: new SqliteDeliveryLedger(store.db, faults),
    modelBaseUrl: model.baseUrl,
    cwd: dir,
  }));
});

afterEach(() => closeGround({ dir, store, model }, gateway));

let nextMessage = 1;
const say = (id: string, text: string) =>
  adapter.receive(
    { chat_id: id, chat_type: 'dm', user_id: `u-${id}`, message_id: String(nextMessage++) },
    text,
  );
const textsTo = (id: string) => adapter.sent.filter((s) => s.chatId === id).map((s) => s.text);

function transcriptOf(chat: string): { role: string; content: string | null }[] {
  return store.db
    .prepare(
      `SELECT m.role, m.content FROM messages m JOIN routes r ON r.session_id = m.session_id
       WHERE r.session_key LIKE ? ORDER BY m.id`,
    )
    .all(`%:${chat}`) as { role: string; content: string | null }[];
}
const count = (sql: string, ...params: unknown[]) =>
  store.db
    .prepare(sql)
    .pluck()
    .get(...params) as number;
const inputTokens = (chat: string) =>
  count('SELECT input_tokens FROM routes WHERE session_key LIKE ?', `%:${chat}`);

async function turnSettled(chat: string): Promise<void> {
  await gateway.events.next('delivery:sent', (e) => e.delivery.target.chat_id === chat);
  await gateway.whenIdle();
}

describe('a chat turn, commit by commit', () => {
  it('is four group-commit operations: session, start with input, end with reply, delivered', async () => {
    const group = CommitGroup.of(store.db);
    const before = group.stats.operations;
    const done = turnSettled('a');
    say('a', 'hello');
    await done;
    // getOrCreateSession, startTurn (marker, inbound row, user message), endTurn (answer, reply
    // row, marker drop, usage) and markDelivered: the writes of a plain turn.
    expect(group.stats.operations - before).toBe(4);
    expect(transcriptOf('a')).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: expect.stringContaining('you said: hello') as string },
    ]);
    expect(count('SELECT count(*) FROM delivery_ledger WHERE delivered_at IS NOT NULL')).toBe(1);
    expect(count('SELECT count(*) FROM turn_markers')).toBe(0);
    expect(count("SELECT count(*) FROM inbound_ledger WHERE outcome = 'turn'")).toBe(1);
    expect(inputTokens('a')).toBeGreaterThan(0);
  });

  it('a start that fails stores neither its marker, nor its message taken, nor its input', async () => {
    failing.set('a', 'startTurn.transaction');
    const complete = gateway.events.next('turn:complete');
    say('a', 'hello');
    expect((await complete).outcome).toBe('failed');
    await gateway.whenIdle();
    expect(transcriptOf('a')).toEqual([]);
    expect(count('SELECT count(*) FROM turn_markers')).toBe(0);
    expect(count("SELECT count(*) FROM inbound_ledger WHERE outcome = 'turn'")).toBe(0);
    // The model was never called; the chat is told.
    expect(model.requests).toHaveLength(0);
    expect(textsTo('a')).toEqual(['Sorry, something went wrong: fault at startTurn.transaction']);
  });

  it('an end that fails stores neither the answer nor its reply row; its tokens are counted apart; the other chat in its batch commits', async () => {
    failing.set('a', 'endTurn.transaction');
    // Both turns end together, so their endTurn usually share a batch: either way b must commit.
    model.hold();
    const bothAsked = model.waitForRequests(2);
    const doneB = turnSettled('b');
    say('a', 'doomed');
    say('b', 'fine');
    await bothAsked;
    model.release();
    await doneB;
    await gateway.whenIdle();

    // a: only its input survived; the chat is told on the ledger, which dropped the marker.
    expect(transcriptOf('a')).toEqual([{ role: 'user', content: 'doomed' }]);
    // The tokens were spent all the same: counted apart, as a local turn's are (issue 26 item 11).
    expect(inputTokens('a')).toBeGreaterThan(0);
    const rowsA = store.db
      .prepare("SELECT text FROM delivery_ledger WHERE chat_id = 'a'")
      .pluck()
      .all() as string[];
    expect(rowsA).toEqual([
      expect.stringMatching(/^Sorry, that turn failed: The transcript could not be written/),
    ]);
    expect(textsTo('a')).toEqual(rowsA);
    expect(textsTo('a').join()).not.toMatch(/you said/);

    // b: unaffected by a's failure in the same batch.
    expect(transcriptOf('b').map((m) => m.role)).toEqual(['user', 'assistant']);
    expect(textsTo('b')).toEqual([expect.stringContaining('you said: fine') as string]);
    expect(inputTokens('b')).toBeGreaterThan(0);
    expect(count('SELECT count(*) FROM turn_markers')).toBe(0);
  });
});
