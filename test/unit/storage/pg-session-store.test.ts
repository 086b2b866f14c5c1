import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { createTestSchema } from '../../shared/postgres.js';
import { runSessionStoreSuite } from '../../shared/session-store.suite.js';

runSessionStoreSuite('PostgreSQL', async () => {
  const schema = await createTestSchema({ migrated: true });
  let store = await PostgresSessionStore.open(schema.url);
  return {
    store,
    async reopen() {
      await store.close();
      store = await PostgresSessionStore.open(schema.url);
      return store;
    },
    async cleanup() {
      await store.close();
      await schema.drop();
    },
  };
});
