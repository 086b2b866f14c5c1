/** Where a secret ended up on disk: the e2e tests of LOC-5 (an api_key lives in memory only). */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { testSchemaOf } from './gateway-harness.js';

/** Every regular file under `dir` (files removed while it is read are skipped). */
export function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = join(dir, name);
    const stat = statSync(file, { throwIfNoEntry: false });
    if (!stat) return [];
    return stat.isDirectory() ? filesUnder(file) : stat.isFile() ? [file] : [];
  });
}

/** The files under `dir` (a daemon's home: database, WAL, logs, gateway.json …) that hold `secret`. */
export function filesHolding(dir: string, secret: string): string[] {
  return filesUnder(dir).filter((file) => readFileSync(file).includes(secret));
}

/**
 * Every row of the PostgreSQL schema of a home started on postgres, as `pg_dump --data-only` writes
 * it out (where a secret would be, were it stored); null for a home on SQLite, whose rows are files.
 */
export function schemaDump(home: string): string | null {
  const schema = testSchemaOf(home);
  if (schema === undefined) return null;
  const dump = spawnSync('pg_dump', [`--schema=${schema.name}`, '--data-only', schema.url], {
    encoding: 'utf8',
  });
  if (dump.status !== 0) throw new Error(`pg_dump failed: ${dump.stderr}`);
  return dump.stdout;
}
