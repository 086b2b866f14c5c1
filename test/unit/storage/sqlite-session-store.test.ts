import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';
import { runSessionStoreSuite } from '../../shared/session-store.suite.js';

runSessionStoreSuite('SQLite', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-store-'));
  const file = path.join(dir, 'state.db');
  let store = SqliteSessionStore.open(file);
  return {
    store,
    async reopen() {
      await store.close();
      store = SqliteSessionStore.open(file);
      return store;
    },
    async cleanup() {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
