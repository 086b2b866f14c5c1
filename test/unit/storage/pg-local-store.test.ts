import { SessionSource } from '../../../src/domain/session/source.js';
import { PostgresLocalStore } from '../../../src/storage/postgres/local-store.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { testReceipt } from '../../shared/local-fixtures.js';
import { runLocalStoreSuite } from '../../shared/local-store.suite.js';
import { createTestSchema, inSchema } from '../../shared/postgres.js';

/** `?` placeholders as PostgreSQL's `$1`, `$2`, … */
const numbered = (text: string) => {
  let n = 0;
  return text.replace(/\?/g, () => `$${++n}`);
};

runLocalStoreSuite('PostgreSQL', async (ids) => {
  const schema = await createTestSchema({ migrated: true });
  const sessions = await PostgresSessionStore.open(schema.url);
  const store = new PostgresLocalStore(sessions.db);
  const epoch = await store.openEpoch('test');
  for (const id of ids) {
    const origin = new SessionSource({ platform: 'local', chat_id: id }).toJSON();
    await store.commitCreation({ receipt: testReceipt(id), origin, title: null, hidden: false });
  }
  return {
    store,
    sessions,
    epoch,
    sql: <T>(text: string, params: readonly unknown[] = []) =>
      inSchema(schema.name, async (c) => (await c.query(numbered(text), params as unknown[])).rows as T[]),
    withFaults: (faults) => new PostgresLocalStore(sessions.db, () => new Date(), faults),
    batches: () => store.group.stats.batches,
    async cleanup() {
      await sessions.close();
      await schema.drop();
    },
  };
});
