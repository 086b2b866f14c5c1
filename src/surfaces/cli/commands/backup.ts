/**
 * `gatehouse backup [PATH]`: SQLite's online backup of a profile's state database, safe while the
 * gateway runs. The copy is owner-only and never written over an existing file. On a PostgreSQL
 * store it refuses and names pg_dump: the server's own tool copies a live schema consistently, and
 * Gatehouse would only be a worse wrapper round it (docs/decisions.md).
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { makeDirs } from '../../../daemon/dirs.js';
import { DaemonError } from '../../../daemon/errors.js';
import { backupDatabase } from '../../../storage/sqlite/maintenance.js';
import { cliHome, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

/** `gatehouse backup [PATH]` (declared in ../program.ts, like every command). */
export async function backup(path: string | undefined, flags: { profile?: string }): Promise<void> {
  const layout = cliHome();
  const { config } = loadCliConfig(layout, { quiet: true });
  if (config.store.kind === 'postgres') {
    const variable = config.store.url_env!;
    throw new DaemonError(
      'not_available',
      `gatehouse backup copies SQLite files, but this store is PostgreSQL (store.kind: postgres): back up its schema with pg_dump instead, e.g. pg_dump --schema=SCHEMA --file=gatehouse.sql "$${variable}"`,
    );
  }
  const profile = flags.profile ?? config.default_profile;
  if (!config.profiles.includes(profile)) {
    throw new DaemonError(
      'invalid_input',
      `--profile ${profile} is not one of the profiles in ${layout.configFile}: ${config.profiles.join(', ')}`,
    );
  }
  const source = layout.stateDb(profile);
  if (!existsSync(source)) {
    throw new DaemonError('not_available', `there is no database at ${source} yet: nothing to back up`);
  }
  const dest = resolve(path ?? join(layout.root, 'backups', `${profile}-${stamp(new Date())}.db`));
  if (existsSync(dest)) {
    throw new DaemonError(
      'invalid_input',
      `${dest} already exists: name a new file (a backup never overwrites one)`,
    );
  }
  if (path === undefined) makeDirs(dirname(dest), 0o700);
  let pages: number;
  try {
    ({ pages } = await backupDatabase(source, dest));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DaemonError(
      'not_available',
      `cannot back up ${source} to ${dest} (${reason}): check that the folder exists and is writable; "gatehouse doctor" checks the database`,
    );
  }
  say(`Backed up ${source} (${pages} pages) to ${dest} (owner-only).`);
  say(`To restore it: gatehouse stop, then gatehouse restore ${dest}`);
}
