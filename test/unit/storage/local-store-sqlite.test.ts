import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { openLocalStore } from '../../shared/local-fixtures.js';
import { runLocalStoreSuite } from '../../shared/local-store.suite.js';

runLocalStoreSuite('SQLite', async (ids) => {
  const { sessions, store, epoch } = await openLocalStore(ids);
  return {
    store,
    sessions,
    epoch,
    sql: <T>(text: string, params: readonly unknown[] = []) => {
      const statement = sessions.db.prepare(text);
      return Promise.resolve(
        (statement.reader ? statement.all(...params) : (statement.run(...params), [])) as T[],
      );
    },
    withFaults: (faults) => new SqliteLocalStore(sessions.db, () => new Date(), faults),
    batches: () => store.group.stats.batches,
    cleanup: () => sessions.close(),
  };
});
