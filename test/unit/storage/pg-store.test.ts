/**
 * The PostgreSQL store beyond the shared suites: migrations from every earlier version, refusals
 * at open (a newer schema, a foreign one, an unreachable server), durability settings, the derived
 * search index and the group commit. Each test in a schema of its own.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  MigrationFailedError,
  SchemaTooNewError,
  StorageUnavailableError,
} from '../../../src/domain/errors.js';
import { PgCommitGroup } from '../../../src/storage/postgres/commit-group.js';
import { PgDatabase, type Sql } from '../../../src/storage/postgres/database.js';
import { latestVersion, type PgMigration } from '../../../src/storage/postgres/migration.js';
import { MIGRATIONS } from '../../../src/storage/postgres/migrations/index.js';
import { PostgresSessionStore } from '../../../src/storage/postgres/session-store.js';
import { source, user } from '../../shared/fixtures.js';
import { createTestSchema, inSchema, type TestSchema } from '../../shared/postgres.js';

const LATEST = latestVersion(MIGRATIONS);
let schemas: TestSchema[] = [];
let open: { close(): Promise<void> }[] = [];

async function schema(): Promise<TestSchema> {
  const s = await createTestSchema();
  schemas.push(s);
  return s;
}

async function versions(s: TestSchema): Promise<number[]> {
  return inSchema(s.name, async (c) =>
    (await c.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map(
      (r) => r.version,
    ),
  );
}

afterEach(async () => {
  for (const o of open) await o.close();
  for (const s of schemas) await s.drop();
  schemas = [];
  open = [];
});

describe('PostgreSQL migrations (STO-6)', () => {
  for (let from = 0; from < LATEST; from++) {
    it(`migrates a schema at version ${from} to ${LATEST}, keeping its rows`, async () => {
      const s = await schema();
      const old = await PgDatabase.open(s.url, { migrations: MIGRATIONS.slice(0, from) });
      await old.close();
      if (from >= 1) {
        await inSchema(s.name, async (c) => {
          await c.query(
            `INSERT INTO sessions (session_id, session_key, created_at) VALUES ('s1', 'k', 'now')`,
          );
          await c.query(
            `INSERT INTO messages (session_id, role, content, created_at) VALUES ('s1', 'user', 'kept quokka', 'now')`,
          );
        });
      }
      const store = await PostgresSessionStore.open(s.url);
      open.push(store);
      expect(await versions(s)).toEqual(MIGRATIONS.map((m) => m.version));
      if (from >= 1) {
        expect((await store.loadTranscript('s1')).map((m) => m.content)).toEqual(['kept quokka']);
        expect((await store.searchMessages('quokka')).map((h) => h.snippet)).toEqual(['kept [quokka]']);
        expect((await store.loadTranscriptTail('s1', 0)).edits).toBe(0);
      }
    });
  }

  it('instances opening one schema at once migrate it once (the advisory lock)', async () => {
    const s = await schema();
    const [a, b] = await Promise.all([PgDatabase.open(s.url), PgDatabase.open(s.url)]);
    open.push(a, b);
    expect(await versions(s)).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it('a failing migration is rolled back whole and the previous version stays', async () => {
    const s = await schema();
    const broken: PgMigration = {
      version: LATEST + 1,
      name: 'broken',
      sql: 'CREATE TABLE half (x int); SELECT 1/0',
    };
    const error = await PgDatabase.open(s.url, { migrations: [...MIGRATIONS, broken] }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(MigrationFailedError);
    expect(await versions(s)).toEqual(MIGRATIONS.map((m) => m.version));
    const half = await inSchema(s.name, (c) => c.query(`SELECT to_regclass('half') AS t`));
    expect(half.rows[0]).toEqual({ t: null });
  });

  it('a schema newer than the code is refused and left untouched', async () => {
    const s = await schema();
    await (await PgDatabase.open(s.url)).close();
    await inSchema(s.name, (c) =>
      c.query(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 'now')`),
    );
    await expect(PgDatabase.open(s.url)).rejects.toBeInstanceOf(SchemaTooNewError);
    expect(await versions(s)).toEqual([...MIGRATIONS.map((m) => m.version), 99]);
  });

  it("a schema holding some other program's tables is refused", async () => {
    const s = await schema();
    await inSchema(s.name, (c) => c.query('CREATE TABLE theirs (x int)'));
    const error = await PgDatabase.open(s.url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as Error).message).toMatch(/some other program/);
  });

  it('an unreachable server is storage_unavailable, and the message never holds the URL', async () => {
    const error = await PgDatabase.open('postgres://gh:s3cret-word@127.0.0.1:1/test').catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(StorageUnavailableError);
    expect((error as Error).message).not.toMatch(/s3cret-word/);
  });
});

describe('PostgreSQL durability and group commit', () => {
  it('commits with synchronous_commit on even when the URL asks for off', async () => {
    const s = await schema();
    const url = new URL(s.url);
    url.searchParams.set('options', `-csearch_path=${s.name} -csynchronous_commit=off`);
    const db = await PgDatabase.open(url.toString());
    open.push(db);
    expect(await db.exclusive((sql) => sql.row('SHOW synchronous_commit'))).toEqual({
      synchronous_commit: 'on',
    });
  });

  it('sessions created at once share commits, and a lost connection refuses every later operation', async () => {
    const s = await schema();
    const store = await PostgresSessionStore.open(s.url);
    open.push(store);
    const group = PgCommitGroup.of(store.db);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.getOrCreateSession(`k${i}`, source())));
    expect(group.stats.operations).toBe(20);
    expect(group.stats.batches).toBeLessThan(20);
    const own = await store.db.exclusive((sql) => sql.row<{ pid: number }>('SELECT pg_backend_pid() AS pid'));
    await inSchema(s.name, (c) => c.query('SELECT pg_terminate_backend($1)', [own!.pid]));
    await expect(store.getOrCreateSession('k-late', source())).rejects.toBeInstanceOf(
      StorageUnavailableError,
    );
    await expect(store.listSessions()).rejects.toBeInstanceOf(StorageUnavailableError);
  });
});

describe('PostgreSQL lazy operations of the group commit (a turn’s claim)', () => {
  const setting = (sql: Sql) => sql.row<{ synchronous_commit: string }>('SHOW synchronous_commit');

  it('a batch of lazy operations alone commits without waiting for the WAL flush; nothing else does', async () => {
    const s = await schema();
    const db = await PgDatabase.open(s.url);
    open.push(db);
    const group = new PgCommitGroup(db);
    expect(await Promise.all([group.runLazily(setting), group.runLazily(setting)])).toEqual([
      { synchronous_commit: 'off' },
      { synchronous_commit: 'off' },
    ]);
    expect(group.stats.lazyBatches).toBe(1);
    // Sharing a batch with an ordinary operation, a lazy one commits synchronously with it.
    expect(await Promise.all([group.run(setting), group.runLazily(setting)])).toEqual([
      { synchronous_commit: 'on' },
      { synchronous_commit: 'on' },
    ]);
    // SET LOCAL ends with its transaction: the connection is back at on for everything after.
    expect(await group.run(setting)).toEqual({ synchronous_commit: 'on' });
    expect(await db.exclusive(setting)).toEqual({ synchronous_commit: 'on' });
  });
});

describe('PostgreSQL full-text search is a derived index (STO-4)', () => {
  it('a dropped index does not block appends; it is marked stale and rebuilt on search', async () => {
    const s = await schema();
    const store = await PostgresSessionStore.open(s.url);
    open.push(store);
    const sid = (await store.getOrCreateSession('k', source())).entry.session_id;
    await store.appendToTranscript(sid, user('before wombat'));
    await store.searchMessages('wombat');
    await inSchema(s.name, (c) => c.query('DROP TABLE messages_search'));
    await store.appendToTranscript(sid, user('after wombat'));
    expect(await store.searchIndexStatus()).toEqual({ stale: true });
    expect((await store.searchMessages('wombat')).map((h) => h.snippet)).toEqual([
      'after [wombat]',
      'before [wombat]',
    ]);
    expect(await store.searchIndexStatus()).toEqual({ stale: false });
  });

  it('rows lost from the index come back with a rebuild', async () => {
    const s = await schema();
    const store = await PostgresSessionStore.open(s.url);
    open.push(store);
    const sid = (await store.getOrCreateSession('k', source())).entry.session_id;
    await store.appendToTranscript(sid, [user('one numbat'), user('two numbat')]);
    expect(await store.searchMessages('numbat')).toHaveLength(2);
    await inSchema(s.name, (c) => c.query('DELETE FROM messages_search'));
    expect(await store.searchMessages('numbat')).toHaveLength(0);
    await store.rebuildSearchIndex();
    expect(await store.searchMessages('numbat')).toHaveLength(2);
  });
});
