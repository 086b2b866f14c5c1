/** The shared DelegationStore suite on both backends: a SQLite file, and a PostgreSQL schema per test. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostgresDelegationStore } from '../../../src/storage/postgres/delegation-store.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { SqliteDelegationStore } from '../../../src/storage/sqlite/delegation-store.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { runDelegationStoreSuite } from '../../shared/delegation-store.suite.js';
import { createTestSchema } from '../../shared/postgres.js';

runDelegationStoreSuite('SQLite', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-delegations-'));
  const store = SqliteSessionStore.open(path.join(dir, 'state.db'));
  return Promise.resolve({
    store: new SqliteDelegationStore(store.db),
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
});

runDelegationStoreSuite('PostgreSQL', async () => {
  const schema = await createTestSchema({ migrated: true });
  const store = await PostgresSessionStore.open(schema.url);
  return {
    store: new PostgresDelegationStore(store.db),
    async cleanup() {
      await store.close();
      await schema.drop();
    },
  };
});
