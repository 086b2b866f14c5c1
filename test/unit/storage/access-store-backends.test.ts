/** The shared AccessStore suite on both backends: a SQLite file, and a PostgreSQL schema per test. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostgresAccessStore } from '../../../src/storage/postgres/access-store.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { SqliteAccessStore } from '../../../src/storage/sqlite/access-store.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { runAccessStoreSuite } from '../../shared/access-store.suite.js';
import { createTestSchema, inSchema } from '../../shared/postgres.js';

runAccessStoreSuite('SQLite', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-access-'));
  const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
  return Promise.resolve({
    store: new SqliteAccessStore(store.db),
    raw: (sql: string) => {
      try {
        store.db.exec(sql);
        return Promise.resolve();
      } catch (error) {
        return Promise.reject(error instanceof Error ? error : new Error(String(error)));
      }
    },
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
});

runAccessStoreSuite('PostgreSQL', async () => {
  const schema = await createTestSchema({ migrated: true });
  const store = await PostgresSessionStore.open(schema.url);
  return {
    store: new PostgresAccessStore(store.db),
    raw: (sql: string) => inSchema(schema.name, async (c) => void (await c.query(sql))),
    async cleanup() {
      await store.close();
      await schema.drop();
    },
  };
});
