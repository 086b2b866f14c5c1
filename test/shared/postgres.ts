/**
 * PostgreSQL for tests: every test works in a schema of its own, created here and dropped by its
 * cleanup, so parallel runs on one server never see each other's rows. The server is the one `.ci/run`
 * makes sure is up (127.0.0.1:5432, trust auth, database `test`); GATEHOUSE_TEST_PG_URL names another.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { MIGRATIONS } from '../../src/storage/postgres/migrations/index.js';

export const PG_TEST_URL = process.env.GATEHOUSE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestSchema {
  name: string;
  /** The server URL with `options=-csearch_path=<schema>`: what store.url_env's variable holds. */
  url: string;
  drop(): Promise<void>;
}

/** The URL whose connections work in `schema` (PostgreSQL's `options` connection parameter). */
export function schemaUrl(schema: string, base = PG_TEST_URL): string {
  const url = new URL(base);
  url.searchParams.set('options', `-csearch_path=${schema}`);
  return url.toString();
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_TEST_URL });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * Every migration's statements and its schema_migrations row, as one multi-statement query:
 * PostgreSQL runs it as one transaction, so a schema arrives at the latest version with one commit
 * instead of one per migration (what a daemon starting on an empty schema does, and what
 * test/unit/storage/pg-migration*.test.ts still prove migration by migration).
 */
function migratedSchemaSql(): string {
  const rows = MIGRATIONS.map(
    (m) =>
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${m.version}, '${m.name}', '${new Date().toISOString()}')`,
  );
  return [
    'CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
    ...MIGRATIONS.map((m) => m.sql),
    ...rows,
  ].join(';\n');
}

/**
 * A schema of the test's own. `migrated: true` brings it to the latest version in one transaction
 * first, for tests about what a store does rather than how it migrates: a daemon or store opened on
 * it finds nothing to apply.
 */
export async function createTestSchema(options: { migrated?: boolean } = {}): Promise<TestSchema> {
  const name = `gh_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  await admin(async (c) => {
    if (!options.migrated) return c.query(`CREATE SCHEMA ${name}`);
    return c.query(`CREATE SCHEMA ${name}; SET search_path TO ${name}; ${migratedSchemaSql()}`);
  });
  return {
    name,
    url: schemaUrl(name),
    drop: () => admin((c) => c.query(`DROP SCHEMA IF EXISTS ${name} CASCADE`)).then(() => undefined),
  };
}

/** Runs SQL in the schema (tests that plant or inspect rows). */
export function inSchema<T>(schema: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  return admin(async (c) => {
    await c.query(`SET search_path TO ${schema}`);
    return fn(c);
  });
}
