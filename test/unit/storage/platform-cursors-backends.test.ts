/** The shared PlatformCursors suite on both backends: a SQLite file, and a PostgreSQL schema per test. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostgresPlatformCursors } from '../../../src/storage/postgres/platform-cursors.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { SqlitePlatformCursors } from '../../../src/storage/sqlite/platform-cursors.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { runPlatformCursorsSuite } from '../../shared/platform-cursors.suite.js';
import { createTestSchema } from '../../shared/postgres.js';

runPlatformCursorsSuite('SQLite', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-cursors-'));
  const file = path.join(dir, 'state.db');
  let store = SqliteSessionStore.open(file);
  return Promise.resolve({
    cursors: new SqlitePlatformCursors(store.db),
    async reopen() {
      await store.close();
      store = SqliteSessionStore.open(file);
      return new SqlitePlatformCursors(store.db);
    },
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
});

runPlatformCursorsSuite('PostgreSQL', async () => {
  const schema = await createTestSchema({ migrated: true });
  let store = await PostgresSessionStore.open(schema.url);
  return {
    cursors: new PostgresPlatformCursors(store.db),
    async reopen() {
      await store.close();
      store = await PostgresSessionStore.open(schema.url);
      return new PostgresPlatformCursors(store.db);
    },
    async cleanup() {
      await store.close();
      await schema.drop();
    },
  };
});
