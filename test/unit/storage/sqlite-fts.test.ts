import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
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
