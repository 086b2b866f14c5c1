/**
 * `gatehouse restore FILE`: the counterpart of `gatehouse backup`. It puts a backup back as a
 * profile's state database, only while the gateway is stopped (a running daemon holds the file and
 * would go on from its own state), and only a file that is a sound Gatehouse database no newer than
 * this code. The database it replaces is kept in <home>/backups, so a restore can itself be undone.
 */
import { existsSync, renameSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { makeDirs } from '../../../daemon/dirs.js';
import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { backupDatabase, checkRestorable } from '../../../storage/sqlite/maintenance.js';
import { cliHome, say } from '../shared.js';
import { loadCliConfig } from '../load-config.js';

function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

/** `gatehouse restore FILE` (declared in ../program.ts, like every command). */
export async function restore(file: string, flags: { profile?: string }): Promise<void> {
  const layout = cliHome();
  const { config } = loadCliConfig(layout, { quiet: true });
  if (config.store.kind === 'postgres') {
    throw new DaemonError(
      'not_available',
      'gatehouse restore puts back SQLite files, but this store is PostgreSQL (store.kind: postgres): restore its schema with psql or pg_restore from your pg_dump instead',
    );
  }
  const profile = flags.profile ?? config.default_profile;
  if (!config.profiles.includes(profile)) {
    throw new DaemonError(
      'invalid_input',
      `--profile ${profile} is not one of the profiles in ${layout.configFile}: ${config.profiles.join(', ')}`,
    );
  }
  const state = gatewayState(layout);
  if (state.status !== 'stopped') {
    throw new DaemonError(
      'already_running',
      `the gateway is running (pid ${state.pid}) and holds the database: run "gatehouse stop" first, then restore`,
    );
  }
  const source = resolve(file);
  if (!existsSync(source)) throw new DaemonError('invalid_input', `${source} does not exist`);
  const finding = checkRestorable(source);
  if (!finding.ok) {
    throw new DaemonError(
      'invalid_input',
      `${source} cannot be restored: ${finding.detail}; nothing was changed`,
    );
  }
  const target = layout.stateDb(profile);
  makeDirs(dirname(target), 0o700);
  // The copy is made beside the target and renamed over it: the state database is either the old
  // one or the restored one, never half of each.
  const incoming = `${target}.restoring`;
  rmSync(incoming, { force: true });
  await backupDatabase(source, incoming);
  let kept: string | null = null;
  if (existsSync(target)) {
    kept = join(layout.root, 'backups', `${profile}-before-restore-${stamp(new Date())}.db`);
    makeDirs(dirname(kept), 0o700);
    renameSync(target, kept);
  }
  // The old database's write-ahead log belongs to it, not to the restored file.
  for (const suffix of ['-wal', '-shm']) {
    if (kept && existsSync(`${target}${suffix}`)) renameSync(`${target}${suffix}`, `${kept}${suffix}`);
    rmSync(`${target}${suffix}`, { force: true });
  }
  renameSync(incoming, target);
  say(`Restored ${source} as the ${profile} profile's database (${finding.detail}).`);
  if (kept) say(`The database it replaced is kept at ${kept}.`);
  say('Start the gateway with "gatehouse start" (or "gatehouse chat").');
}
