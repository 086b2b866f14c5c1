/**
 * Issue 32 aim 3: whole transcripts read and serialized on a thread of the store's own
 * (storage/sqlite/transcript-json.ts), with its own read-only connection, so a resume or history of
 * a long session does not take the daemon's event loop. The thread runs the built bundle entry
 * (dist/storage/sqlite/transcript-json-worker.js), as the daemon runs it. What it sends must be,
 * byte for byte, what the objects read on the event loop would have been written as.
 */
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { JsonText } from '../../src/domain/json-text.js';
import { publicMessage, type StoredMessage } from '../../src/domain/ports/session-store.js';
import type { TranscriptMessage } from '../../src/domain/vocabulary.js';
import { packageFile } from '../../src/runtime/package-files.js';
import { messageFromRow, type MessageRow } from '../../src/storage/rows/messages.js';
import { SqliteSessionStore } from '../../src/storage/sqlite/session-store.js';
import { PIECE_CHARS, TranscriptJsonReader } from '../../src/storage/sqlite/transcript-json.js';
import { TRANSCRIPT_SLICE } from '../../src/storage/sqlite/transcript-actions.js';
import { source } from '../shared/fixtures.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { createAttached, runCommand, runTurn, tempDir, useFixture } from './seed-fixture.js';

const WORKER = packageFile('dist', 'storage', 'sqlite', 'transcript-json-worker.js');

/** Messages with what JSON escapes and what UTF-8 spreads over several bytes, and every extra field. */
function awkward(n: number): TranscriptMessage[] {
  return Array.from({ length: n }, (_, i): TranscriptMessage => {
    if (i % 3 === 1)
      return {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: `call-${i}`, type: 'function', function: { name: 'bash', arguments: '{"c":"ls"}' } },
        ],
        reasoning: `thought ${i} «ß»`,
        admission_id: `a-${i}`,
      };
    if (i % 3 === 2)
      return {
        role: 'tool',
        tool_call_id: `call-${i - 1}`,
        content: `line\t${i}\n"quoted" \\ back ✓ 😀 \u0001 \u2028 `.repeat(1 + (i % 40)),
        tool_outcome: { is_error: i % 5 === 0, approval: 'once' },
      };
    return { role: 'user', content: `question ${i}: Grüße 👋🏽`, steer_id: i % 2 ? `s-${i}` : undefined };
  });
}

const open: SqliteSessionStore[] = [];
afterEach(async () => {
  for (const store of open.splice(0)) await store.close();
});

/** Whether the store's transcript thread is running now. */
const running = (store: SqliteSessionStore): boolean =>
  (store as unknown as { transcriptJson: { running: boolean } }).transcriptJson.running;

function storeWithThread(file = join(tempDir(), 'state.db')): SqliteSessionStore {
  const store = SqliteSessionStore.open(file, { transcriptWorker: WORKER });
  open.push(store);
  return store;
}

describe('the transcript JSON thread (in process, the built worker)', () => {
  it('sends the very JSON of the transcript, both as stored and as clients see it, in pieces between entries', async () => {
    const store = storeWithThread();
    const { entry } = await store.getOrCreateSession('k', source());
    await store.appendToTranscript(entry.session_id, awkward(3_000));
    // A rewound message is not visible: the thread reads what loadTranscript reads.
    await store.rewindSession(entry.session_id, 1);
    const objects = await store.loadTranscript(entry.session_id);
    expect(objects.length).toBeGreaterThan(2_900);

    expect(running(store)).toBe(false);
    const stored = (await store.loadWholeTranscript!(entry.session_id, 'stored')) as JsonText;
    const shown = (await store.loadWholeTranscript!(entry.session_id, 'public')) as JsonText;
    expect(stored).toBeInstanceOf(JsonText);
    expect(shown).toBeInstanceOf(JsonText);
    expect(stored.length).toBe(objects.length);
    expect(shown.length).toBe(objects.length);
    expect(JSON.stringify({ m: stored })).toBe(JSON.stringify({ m: objects }));
    expect(JSON.stringify({ m: shown })).toBe(JSON.stringify({ m: objects.map(publicMessage) }));
    // Bytes on their own, whole UTF-8, cut between entries near PIECE_CHARS.
    expect(stored.body.length).toBeGreaterThan(2);
    for (const piece of stored.body) {
      expect(Buffer.from(Buffer.from(piece).toString('utf8'), 'utf8').equals(piece)).toBe(true);
      expect(piece.byteLength).toBeLessThan(4 * (PIECE_CHARS + 64 * 1024));
    }
    expect(running(store)).toBe(true);
  });

  it('reads a transcript of one slice on the loop, as loadTranscript, and starts no thread for it', async () => {
    const store = storeWithThread();
    const { entry } = await store.getOrCreateSession('k', source());
    await store.appendToTranscript(entry.session_id, awkward(TRANSCRIPT_SLICE - 1));
    expect(await store.loadWholeTranscript!(entry.session_id, 'public')).toEqual(
      await store.loadTranscript(entry.session_id),
    );
    // An unknown session reads as an empty transcript, as loadTranscript reads it.
    expect(await store.loadWholeTranscript!('nope', 'public')).toEqual([]);
    expect(running(store)).toBe(false);
    await store.appendToTranscript(entry.session_id, awkward(1));
    expect(await store.loadWholeTranscript!(entry.session_id, 'public')).toBeInstanceOf(JsonText);
    expect(running(store)).toBe(true);
  });

  it('reads beside the writer, and stops with the store: a read after close is refused', async () => {
    const store = storeWithThread();
    const { entry } = await store.getOrCreateSession('k', source());
    await store.appendToTranscript(entry.session_id, awkward(TRANSCRIPT_SLICE));
    const reads: Promise<StoredMessage[] | JsonText>[] = [];
    for (let i = 0; i < 20; i++) {
      await store.appendToTranscript(entry.session_id, awkward(50));
      reads.push(store.loadWholeTranscript!(entry.session_id, 'stored'));
    }
    const texts = await Promise.all(reads);
    expect(texts.every((text) => text instanceof JsonText)).toBe(true);
    const lengths = texts.map((text) => text.length - TRANSCRIPT_SLICE);
    // Each read is one whole state of the transcript: some number of whole appends, never fewer
    // than the appends before it was asked for, in order.
    lengths.forEach((length, i) => {
      expect(length % 50).toBe(0);
      expect(length).toBeGreaterThanOrEqual((i + 1) * 50);
    });
    expect([...lengths].sort((a, b) => a - b)).toEqual(lengths);

    await store.close();
    open.splice(open.indexOf(store), 1);
    expect(running(store)).toBe(false);
    await expect(store.loadWholeTranscript!(entry.session_id, 'stored')).rejects.toThrow();
  });

  it('fails the request when its thread cannot run, and starts a new thread for the next one', async () => {
    const file = join(tempDir(), 'state.db');
    const broken = SqliteSessionStore.open(file, { transcriptWorker: join(tempDir(), 'missing-worker.js') });
    open.push(broken);
    const { entry } = await broken.getOrCreateSession('k', source());
    await broken.appendToTranscript(entry.session_id, awkward(TRANSCRIPT_SLICE));
    await expect(broken.loadWholeTranscript!(entry.session_id, 'stored')).rejects.toThrow(/missing-worker/);
    await expect(broken.loadWholeTranscript!(entry.session_id, 'stored')).rejects.toThrow(/missing-worker/);
  });

  it('bounds the bytes it has handed out: a read waits while earlier replies are held, and goes on once they are released', async () => {
    const file = join(tempDir(), 'state.db');
    const store = storeWithThread(file);
    const { entry } = await store.getOrCreateSession('k', source());
    await store.appendToTranscript(entry.session_id, awkward(30));
    const reader = new TranscriptJsonReader(file, WORKER, { maxHeldBytes: 1 });
    try {
      const first = await reader.read(entry.session_id, 'stored');
      const bytes = first.body.reduce((sum, piece) => sum + piece.byteLength, 0);
      expect(reader.load).toEqual({ heldBytes: bytes, waiting: 0 });
      let second: JsonText | null = null;
      const reading = reader.read(entry.session_id, 'stored').then((text) => (second = text));
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(second).toBeNull();
      expect(reader.load).toEqual({ heldBytes: bytes, waiting: 1 });
      first.release();
      await reading;
      expect(second!.toJSON()).toEqual(first.toJSON());
      second!.release();
      expect(reader.load).toEqual({ heldBytes: 0, waiting: 0 });
    } finally {
      await reader.close();
    }
  });

  it('is not there without a worker entry: callers read with loadTranscript', () => {
    const plain = SqliteSessionStore.open(join(tempDir(), 'state.db'));
    open.push(plain);
    expect(plain.loadWholeTranscript).toBeUndefined();
  });
});

const fx = useFixture();

/** session.resume and both views of session.history, and what the store's rows say they must be. */
async function readBoth(
  daemonHome: { layout: { stateDb(profile: string): string } },
  client: GatewayClient,
  session_id: string,
) {
  const snapshot = await client.call<{ messages: unknown[]; message_count: number }>('session.resume', {
    session_id,
  });
  const full = await client.call<{ messages: unknown[]; boundaries: unknown[] }>('session.history', {
    session_id,
  });
  const model = await client.call<{ messages: unknown[] }>('session.history', { session_id, view: 'model' });
  // What loadTranscript would have read on the event loop: the rows, decoded as the store does.
  const db = new Database(daemonHome.layout.stateDb('default'), { readonly: true });
  const rows = db
    .prepare(
      `SELECT m.id, m.session_id, m.role, m.content, m.extra_json, m.created_at FROM messages m
       JOIN routes r ON r.session_id = m.session_id
       WHERE r.session_key LIKE ? AND m.removed_at IS NULL ORDER BY m.id`,
    )
    .all(`%${session_id}`) as MessageRow[];
  db.close();
  return { snapshot, full, model, objects: rows.map(messageFromRow) };
}

describe('session.resume and session.history through the daemon', () => {
  it('send the transcript as the stored rows say, byte for byte, short (read on the loop) or long (on the thread)', async () => {
    const first = await fx.daemon();
    const client = await first.connect();
    const session_id = await createAttached(client, { cwd: tempDir() });
    await runTurn(client, session_id, 's1', 'Grüße 👋🏽 "quoted" \\ back');
    await runCommand(fx, client, session_id, 's2', 'printf "line\\tone ✓ 😀\\n"');

    const short = await readBoth(first, client, session_id);
    expect(short.objects.some((m) => m.tool_calls !== undefined)).toBe(true);
    expect(short.objects.some((m) => m.role === 'tool' && m.content?.includes('😀'))).toBe(true);
    await first.stop();
    fx.forget(first);

    // Written into the stopped daemon's store, as a long-lived session would have left them.
    const store = SqliteSessionStore.open(first.layout.stateDb('default'));
    await store.appendToTranscript(short.objects[0]!.session_id, awkward(TRANSCRIPT_SLICE + 200));
    await store.close();
    const second = await fx.daemon({ home: first.home });
    const long = await readBoth(second, await second.connect(), session_id);
    expect(long.objects.length).toBeGreaterThan(TRANSCRIPT_SLICE);

    for (const { snapshot, full, model, objects } of [short, long]) {
      expect(snapshot.message_count).toBe(objects.length);
      expect(JSON.stringify(snapshot.messages)).toBe(JSON.stringify(objects.map(publicMessage)));
      expect(JSON.stringify(full.messages)).toBe(JSON.stringify(objects));
      expect(full.boundaries).toEqual([]);
      expect(model.messages[0]).toMatchObject({ role: 'system' });
      expect(JSON.stringify(model.messages.slice(1))).toBe(JSON.stringify(objects));
    }
  });
});
