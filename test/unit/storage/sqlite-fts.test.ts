import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../../src/storage/sqlite/database.js';
import { MIGRATIONS } from '../../../src/storage/sqlite/migrations/index.js';
import { insertMessages } from '../../../src/storage/sqlite/ops/messages.js';
import { insertSession } from '../../../src/storage/sqlite/ops/sessions.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { appendInTransaction } from '../../../src/storage/sqlite/transcript-actions.js';
import { CommitGroup } from '../../../src/storage/sqlite/commit-group.js';
import { InvalidParamsError } from '../../../src/domain/errors.js';
import { source } from '../../shared/session-store.suite.js';

let dir: string;
let store: SqliteSessionStore;
let sid: string;
beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-fts-'));
  store = SqliteSessionStore.open(path.join(dir, 'state.db'));
  sid = (await store.getOrCreateSession('k', source())).entry.session_id;
  for (let i = 0; i < 20; i++)
    await store.appendToTranscript(sid, { role: 'user', content: `before${i} common` });
});
afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Writes into the index's shadow tables, which SQLite's defensive mode normally forbids. */
function tamper(sql: string): void {
  store.db.unsafeMode(true);
  try {
    store.db.exec(sql);
  } finally {
    store.db.unsafeMode(false);
  }
}

async function appendAfter(): Promise<void> {
  for (let i = 0; i < 20; i++)
    await store.appendToTranscript(sid, { role: 'assistant', content: `after${i} common` });
}

async function expectEveryMessageFound(): Promise<void> {
  for (let i = 0; i < 20; i++) {
    expect(await store.searchMessages(`before${i}`)).toHaveLength(1);
    expect(await store.searchMessages(`after${i}`)).toHaveLength(1);
  }
  expect(await store.searchMessages('common', { limit: 500 })).toHaveLength(40);
  expect(await store.loadTranscript(sid)).toHaveLength(40);
}

describe('STO-4 full-text search is a derived index', () => {
  it('a dropped index does not block appends; it is marked stale and rebuilt on search', async () => {
    store.db.exec('DROP TABLE messages_fts');
    await appendAfter();
    expect(await store.searchIndexStatus()).toEqual({ stale: true });
    await expectEveryMessageFound();
    expect(await store.searchIndexStatus()).toEqual({ stale: false });
  });

  it('an index whose shadow tables were emptied does not block appends; rebuild restores it', async () => {
    tamper('DELETE FROM messages_fts_data');
    await appendAfter();
    await store.rebuildSearchIndex();
    await expectEveryMessageFound();
  });

  it('garbage written into the index does not block appends; rebuild restores it', async () => {
    tamper(`UPDATE messages_fts_data SET block = randomblob(64)`);
    tamper(`UPDATE messages_fts_idx SET pgno = pgno + 1000`);
    await appendAfter();
    await store.rebuildSearchIndex();
    await expectEveryMessageFound();
  });

  it('the index can be dropped and rebuilt without losing a message, after a reopen too', async () => {
    await appendAfter();
    store.db.exec('DROP TABLE messages_fts');
    await store.rebuildSearchIndex();
    await store.close();
    store = SqliteSessionStore.open(path.join(dir, 'state.db'));
    await expectEveryMessageFound();
  });
});

describe('issue 12 item 9: search errors are classified by SQLite error code, not message text', () => {
  it('a refused FTS5 query is invalid_params naming the fix; a corrupt index is not blamed on the query', async () => {
    const refused = await store.searchMessages('common AND', { syntax: 'fts' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(InvalidParamsError);
    expect((refused as Error).message).toMatch(/not valid FTS5 syntax.*leave out syntax: "fts"/);
    await store.searchMessages('common'); // the index has caught up: the next search reads it as is
    tamper(`UPDATE messages_fts_data SET block = randomblob(64)`);
    const corrupt = await store.searchMessages('common', { syntax: 'fts' }).catch((e: unknown) => e);
    expect(corrupt).not.toBeInstanceOf(InvalidParamsError);
    expect(corrupt).toMatchObject({ code: 'SQLITE_CORRUPT_VTAB' });
  });
});

describe('STO-2 rewind keeps its audit trail', () => {
  it('rewound messages stay in the table, tagged with an audit row', async () => {
    await store.appendToTranscript(sid, { role: 'assistant', content: 'reply' });
    const result = await store.rewindSession(sid, 2);
    expect(result).toEqual({ rewound_count: 3, turns_undone: 2, target_text: 'before18 common' });
    const audit = store.db.prepare('SELECT * FROM rewinds').all();
    expect(audit).toMatchObject([
      {
        session_id: sid,
        turns_requested: 2,
        turns_undone: 2,
        rewound_count: 3,
        target_text: 'before18 common',
      },
    ]);
    const kept = store.db
      .prepare(`SELECT content, removed_by FROM messages WHERE removed_at IS NOT NULL ORDER BY id`)
      .all();
    expect(kept).toEqual([
      { content: 'before18 common', removed_by: 'rewind' },
      { content: 'before19 common', removed_by: 'rewind' },
      { content: 'reply', removed_by: 'rewind' },
    ]);
    expect(await store.loadTranscript(sid)).toHaveLength(18);
  });
});

describe('STO-4 the index catches up with the messages', () => {
  const watermark = () =>
    store.db.prepare('SELECT indexed_through FROM search_index_state').pluck().get() as number;
  const lastMessageId = () => store.db.prepare('SELECT max(id) FROM messages').pluck().get() as number;
  const indexedRows = (word: string) =>
    store.db.prepare('SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?').pluck().get(word);

  it('a write does not touch the index, yet a search right after it finds the message', async () => {
    const before = watermark();
    await store.appendToTranscript(sid, { role: 'assistant', content: 'freshly written' });
    expect(watermark()).toBe(before); // not indexed by the write itself
    expect(indexedRows('freshly')).toBe(0);
    const hits = await store.searchMessages('freshly');
    expect(hits.map((h) => h.snippet)).toEqual(['[freshly] written']);
    expect(watermark()).toBe(lastMessageId());
  });

  it('catches up on its own shortly after writes, all of them in one batch', async () => {
    await appendAfter();
    expect(indexedRows('common')).toBeLessThan(40);
    const deadline = Date.now() + 5_000;
    while (watermark() < lastMessageId() && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(watermark()).toBe(lastMessageId());
    expect(indexedRows('common')).toBe(40);
    await expectEveryMessageFound();
  });

  it('indexes each message once however often it catches up', async () => {
    await store.appendToTranscript(sid, { role: 'user', content: 'once only' });
    await store.searchMessages('once');
    await store.searchIndexStatus();
    await store.appendToTranscript(sid, { role: 'user', content: 'twice maybe' });
    expect(await store.searchMessages('once')).toHaveLength(1);
    expect(await store.searchMessages('twice')).toHaveLength(1);
    expect(indexedRows('once')).toBe(1);
  });
});

describe('appending inside a group-commit operation (the turn path)', () => {
  it('stores the messages in the caller’s transaction, and the index catches up with them too', async () => {
    const stored = await CommitGroup.of(store.db).run(() =>
      appendInTransaction(store.db, sid, { role: 'assistant', content: 'grouped answer' }, new Date()),
    );
    expect(stored).toHaveLength(1);
    expect((await store.loadTranscript(sid)).at(-1)?.content).toBe('grouped answer');
    expect(await store.searchMessages('grouped')).toHaveLength(1);
  });

  it('refuses to run outside a write transaction', () => {
    expect(() => appendInTransaction(store.db, sid, { role: 'user', content: 'loose' }, new Date())).toThrow(
      /needs an open write transaction/,
    );
  });
});

describe('STO-6 migration 006 (search watermark)', () => {
  it('starts the watermark at the last message an older database had already indexed', () => {
    const file = path.join(dir, 'v5.db');
    const old = openDatabase(file, { migrations: MIGRATIONS.slice(0, 5) });
    insertSession(old, { sessionId: 's1', sessionKey: 'k5', origin: null, createdAt: 'now' });
    const rows = insertMessages(old, 's1', [{ role: 'user', content: 'indexed before the upgrade' }], 'now');
    // Version 5 indexed every message in the transaction that wrote it.
    old.prepare('INSERT INTO messages_fts (rowid, content) VALUES (?, ?)').run(rows[0]!.id, rows[0]!.content);
    old.close();
    const db = openDatabase(file);
    try {
      expect(db.prepare('SELECT indexed_through FROM search_index_state').pluck().get()).toBe(rows[0]!.id);
    } finally {
      db.close();
    }
  });
});
