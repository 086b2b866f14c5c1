import { SqliteLocalStore } from '../../../src/storage/sqlite/local-store.js';
import { openLocalStore } from '../../shared/local-fixtures.js';
import { runLocalStoreSuite } from '../../shared/local-store.suite.js';

runLocalStoreSuite('SQLite', async (ids) => {
  const { sessions, store, epoch } = await openLocalStore(ids);
  // The suite counts which operations share a commit; a transaction cut short by time on a busy
  // machine is commit-group.test.ts's subject.
  store.group.sliceUs = Number.POSITIVE_INFINITY;
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
