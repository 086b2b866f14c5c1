/** Where a secret ended up on disk: the e2e tests of LOC-5 (an api_key lives in memory only). */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

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
