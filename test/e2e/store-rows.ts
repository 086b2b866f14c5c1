/**
 * Straight at the state database of a stopped (or killed) daemon's home, whichever backend it ran
 * on: the rows a test reads or plants (a tampered receipt, a fork) are the same SQL on SQLite and
 * PostgreSQL, written with `?` placeholders. On postgres it is the home's test schema.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import { sqliteRows, type RawRows } from '../../scripts/torture/tamper.js';
import type { HomeLayout } from '../../src/daemon/home.js';
import { PostgresSessionStore } from '../../src/storage/postgres/session-store.js';
import type { SessionStore } from '../../src/domain/ports/session-store.js';
import { SqliteSessionStore } from '../../src/storage/sqlite/session-store.js';
import { testSchemaOf, type Backend } from './gateway-harness.js';

export interface StoreRows extends RawRows {
  all<T>(sql: string, ...params: unknown[]): Promise<T[]>;
  close(): Promise<void>;
}

type Home = { home: string; layout: HomeLayout };
const INT8_OID = 20;

function schemaUrl(d: Home): string {
  const schema = testSchemaOf(d.home);
  if (schema === undefined) throw new Error(`${d.home} was not started on postgres`);
  return schema.url;
}

/** `?` placeholders as PostgreSQL's `$1`, `$2`, … */
const numbered = (sql: string): string => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

export async function storeRows(d: Home, backend: Backend): Promise<StoreRows> {
  if (backend === 'sqlite') {
    const db = new Database(d.layout.stateDb('default'));
    return {
      ...sqliteRows(db),
      all: <T>(sql: string, ...params: unknown[]) => Promise.resolve(db.prepare(sql).all(...params) as T[]),
      close: () => Promise.resolve(void db.close()),
    };
  }
  // BIGINT columns (epochs, ids) read as numbers, as the store reads them.
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === INT8_OID ? Number : (pg.types.getTypeParser(oid, format) as (value: string) => unknown),
  };
  const client = new pg.Client({ connectionString: schemaUrl(d), types });
  await client.connect();
  const all = async <T>(sql: string, ...params: unknown[]): Promise<T[]> =>
    (await client.query(numbered(sql), params)).rows as T[];
  return {
    all,
    get: async <T>(sql: string, ...params: unknown[]) => (await all<T>(sql, ...params))[0],
    run: async (sql: string, ...params: unknown[]) => void (await client.query(numbered(sql), params)),
    close: () => client.end(),
  };
}

/** The home's session store, opened as the daemon opens it (the daemon must be down). */
export async function openSessionStore(d: Home, backend: Backend): Promise<SessionStore> {
  return backend === 'sqlite'
    ? SqliteSessionStore.open(d.layout.stateDb('default'))
    : PostgresSessionStore.open(schemaUrl(d));
}
