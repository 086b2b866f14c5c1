/**
 * PostgreSQL for the benchmarks (not itself a bench): a fresh schema of the server on
 * 127.0.0.1:5432 (GATEHOUSE_BENCH_PG_URL names another) for each run, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export const PG_URL = process.env.GATEHOUSE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface BenchSchema {
  /** The server URL whose connections work in the schema (what store.url_env's variable holds). */
  url: string;
  drop(): Promise<void>;
}

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: PG_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export async function createBenchSchema(): Promise<BenchSchema> {
  const schema = `gh_bench_${randomBytes(4).toString('hex')}`;
  await admin(`CREATE SCHEMA ${schema}`);
  const url = new URL(PG_URL);
  url.searchParams.set('options', `-csearch_path=${schema}`);
  return { url: url.toString(), drop: () => admin(`DROP SCHEMA IF EXISTS ${schema} CASCADE`) };
}
