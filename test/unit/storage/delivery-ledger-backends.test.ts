/** The shared DeliveryLedger suite on both backends: a SQLite file, and a PostgreSQL schema per test. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PostgresDeliveryLedger } from '../../../src/storage/postgres/delivery-ledger.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { SqliteDeliveryLedger } from '../../../src/storage/sqlite/delivery-ledger.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { runDeliveryLedgerSuite } from '../../shared/delivery-ledger.suite.js';
import { createTestSchema } from '../../shared/postgres.js';

runDeliveryLedgerSuite('SQLite', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-ledger-'));
  const file = path.join(dir, 'state.db');
  let store = SqliteSessionStore.open(file);
  return Promise.resolve({
    store,
    ledger: new SqliteDeliveryLedger(store.db),
    async reopen() {
      await store.close();
      store = SqliteSessionStore.open(file);
      return { store, ledger: new SqliteDeliveryLedger(store.db) };
    },
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  });
});

runDeliveryLedgerSuite('PostgreSQL', async () => {
  const schema = await createTestSchema({ migrated: true });
  let store = await PostgresSessionStore.open(schema.url);
  return {
    store,
    ledger: new PostgresDeliveryLedger(store.db),
    async reopen() {
      await store.close();
      store = await PostgresSessionStore.open(schema.url);
      return { store, ledger: new PostgresDeliveryLedger(store.db) };
    },
    async cleanup() {
      await store.close();
      await schema.drop();
    },
  };
});
