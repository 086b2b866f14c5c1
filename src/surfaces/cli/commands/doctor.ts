/**
 * `gatehouse doctor`: checks what a gateway needs — an owner-only home, a valid config, sound
 * databases and search indexes — and prints each check with what to do when it fails. Exits 1 when
 * any check fails. `--repair-search` rebuilds a broken search index (the gateway must be stopped).
 * On `store.kind: postgres` it connects to the server whose URL is in `store.url_env`'s variable
 * (never printing the URL) and checks the schema's version, a read, and the search index. Each
 * configured model provider is asked for its model list (doctor-model.ts).
 */
import { emptyDatabaseAdvice, emptyDatabaseFile } from '../../../storage/sqlite/database.js';
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describeStore, loadConfig, type LoadedConfig } from '../../../daemon/config.js';
import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import type { HomeLayout } from '../../../daemon/home.js';
import {
  checkIntegrity,
  checkSearchIndex,
  rebuildSearchIndexOf,
  type Finding,
} from '../../../storage/sqlite/maintenance.js';
import type { PgFinding } from '../../../storage/postgres/maintenance.js';
import { colours } from '../colour.js';
import { cliHome, say } from '../shared.js';
import { modelChecks } from './doctor-model.js';

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
  /** What to do, when the check failed. */
  fix?: string;
}

function check(name: string, finding: Finding, fix: string): Check {
  return finding.ok ? { name, ...finding } : { name, ...finding, fix };
}

function mode(path: string): number {
  return lstatSync(path).mode & 0o777;
}

/** Entries under the home that others may read or enter (the home holds credentials and transcripts). */
function exposedEntries(root: string, limit = 5): string[] {
  const exposed: string[] = [];
  const walk = (dir: string, depth: number): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (exposed.length >= limit) return;
      const path = join(dir, entry.name);
      if (entry.isSymbolicLink()) continue;
      if ((mode(path) & 0o077) !== 0) exposed.push(`${path} (${mode(path).toString(8)})`);
      if (entry.isDirectory() && depth < 4) walk(path, depth + 1);
    }
  };
  walk(root, 0);
  return exposed;
}

function homeChecks(layout: HomeLayout): Check[] {
  let stat;
  try {
    stat = lstatSync(layout.root);
  } catch {
    return [
      { name: 'home', ok: true, detail: `${layout.root} does not exist yet (the first start creates it)` },
    ];
  }
  if (!stat.isDirectory()) {
    return [
      {
        name: 'home',
        ok: false,
        detail: `${layout.root} is not a folder`,
        fix: 'set GATEHOUSE_HOME to a folder, or move this file aside',
      },
    ];
  }
  const checks: Check[] = [];
  const mine = process.getuid === undefined || stat.uid === process.getuid();
  const rootMode = stat.mode & 0o777;
  checks.push(
    mine && (rootMode & 0o077) === 0
      ? { name: 'home', ok: true, detail: `${layout.root} is yours and owner-only (${rootMode.toString(8)})` }
      : {
          name: 'home',
          ok: false,
          detail: `${layout.root} is ${mine ? '' : 'not yours and '}mode ${rootMode.toString(8)}`,
          fix: mine ? `chmod 700 ${layout.root}` : 'use a home of your own (GATEHOUSE_HOME)',
        },
  );
  const exposed = exposedEntries(layout.root);
  checks.push(
    exposed.length === 0
      ? { name: 'permissions', ok: true, detail: 'everything in the home is owner-only' }
      : {
          name: 'permissions',
          ok: false,
          detail: `others may read: ${exposed.join(', ')}`,
          fix: `chmod -R go-rwx ${layout.root}`,
        },
  );
  return checks;
}

function configCheck(layout: HomeLayout): { check: Check; loaded: LoadedConfig | null } {
  try {
    const loaded = loadConfig(layout.configFile);
    const notes = loaded.notices.length > 0 ? ` (note: ${loaded.notices.join('; ')})` : '';
    return { check: { name: 'config', ok: true, detail: `${layout.configFile} is valid${notes}` }, loaded };
  } catch (error) {
    const message = error instanceof DaemonError ? error.message : String(error);
    return {
      check: {
        name: 'config',
        ok: false,
        detail: message,
        fix: `fix the key it names (docs/configuration.md), or move ${layout.configFile} aside to start from defaults`,
      },
      loaded: null,
    };
  }
}

function databaseChecks(layout: HomeLayout, profile: string): Check[] {
  const file = layout.stateDb(profile);
  try {
    lstatSync(file);
  } catch {
    return [
      {
        name: `database ${profile}`,
        ok: true,
        detail: `${file} does not exist yet (the first start creates it)`,
      },
    ];
  }
  if (emptyDatabaseFile(file))
    return [
      {
        name: `database ${profile}`,
        ok: false,
        detail: `${file} is empty (0 bytes): its contents were lost; the gateway refuses to start on it`,
        fix: emptyDatabaseAdvice(file),
      },
    ];
  const found = checkIntegrity(file);
  const integrity = check(
    `database ${profile}`,
    { ok: found.ok, detail: `${file}: ${found.detail}` },
    `stop the gateway, move the file aside (mv ${file} ${file}.broken) and restore a backup (made by "gatehouse backup") in its place, or start with an empty store`,
  );
  if (!integrity.ok) return [integrity];
  const search = check(
    `search ${profile}`,
    checkSearchIndex(file),
    'the index is derived from the stored messages, so nothing is lost: stop the gateway and run "gatehouse doctor --repair-search"',
  );
  return [integrity, search];
}

/** The URL of the PostgreSQL store from its variable, or null when the variable is not set here. */
function pgUrl(loaded: LoadedConfig, env: NodeJS.ProcessEnv): string | null {
  const url = env[loaded.config.store.url_env!];
  return url === undefined || url === '' ? null : url;
}

/**
 * The PostgreSQL store: the variable is set, the server answers, and the schema's version, a read
 * and the search index are sound. Only the variable's name and the schema are shown, never the URL.
 */
async function postgresChecks(loaded: LoadedConfig, env: NodeJS.ProcessEnv): Promise<Check[]> {
  const name = loaded.config.store.url_env!;
  const url = pgUrl(loaded, env);
  if (url === null) {
    return [
      {
        name: 'store',
        ok: false,
        detail: `${describeStore(loaded.config)}, but ${name} is not set in this environment`,
        fix: `export ${name}=postgres://… (the daemon's URL) and run doctor again; the daemon needs it too`,
      },
    ];
  }
  // `pg` is loaded only for a PostgreSQL store (docs/decisions.md, issue 33).
  const { inspectPgStore } = await import('../../../storage/postgres/maintenance.js');
  const findings = await inspectPgStore(url, name);
  const named = (label: string, finding: PgFinding | null): Check[] =>
    finding === null ? [] : [{ name: label, ...finding }];
  return [
    ...named(
      'store',
      findings.server.ok
        ? { ...findings.server, detail: `postgres: ${findings.server.detail}` }
        : findings.server,
    ),
    ...named('schema', findings.schema),
    ...named('database', findings.read),
    ...named('search', findings.search),
  ];
}

export async function runChecks(layout: HomeLayout, env: NodeJS.ProcessEnv = process.env): Promise<Check[]> {
  const checks = homeChecks(layout);
  const { check: config, loaded } = configCheck(layout);
  checks.push(config);
  const profiles = loaded?.config.profiles ?? ['default'];
  if (loaded?.config.store.kind === 'postgres') checks.push(...(await postgresChecks(loaded, env)));
  else {
    checks.push({ name: 'store', ok: true, detail: 'sqlite (state.db in each profile folder)' });
    for (const profile of profiles) checks.push(...databaseChecks(layout, profile));
  }
  if (loaded) checks.push(...(await modelChecks(loaded.config, env)));
  const state = gatewayState(layout);
  checks.push({
    name: 'gateway',
    ok: true,
    detail:
      state.status === 'running'
        ? `running (pid ${state.pid}) at ${state.info.url}; control socket ${layout.controlSocket}`
        : `${state.status}; its control socket will be ${layout.controlSocket}`,
  });
  return checks;
}

/** Rebuilds every failed search index; returns the profiles (or `postgres`) it rebuilt. */
async function repairSearch(layout: HomeLayout): Promise<string[]> {
  if (gatewayState(layout).status !== 'stopped') {
    throw new DaemonError(
      'already_running',
      'stop the gateway first ("gatehouse stop"): the repair rewrites the index',
    );
  }
  const repaired: string[] = [];
  for (const check of await runChecks(layout)) {
    if (check.ok) continue;
    if (check.name === 'search') {
      // Only the PostgreSQL store has one search check, named without a profile.
      const loaded = loadConfig(layout.configFile);
      const { rebuildPgSearchIndex } = await import('../../../storage/postgres/maintenance.js');
      await rebuildPgSearchIndex(pgUrl(loaded, process.env)!);
      repaired.push('postgres');
    } else if (check.name.startsWith('search ')) {
      const profile = check.name.slice('search '.length);
      rebuildSearchIndexOf(layout.stateDb(profile));
      repaired.push(profile);
    }
  }
  return repaired;
}

/** `gatehouse doctor`: every check printed with what to do; exit code 1 when one fails. */
export async function doctor(flags: { json?: boolean; repairSearch?: boolean }): Promise<void> {
  const layout = cliHome();
  const repaired = flags.repairSearch ? await repairSearch(layout) : [];
  const checks = await runChecks(layout);
  const ok = checks.every((c) => c.ok);
  if (flags.json) {
    say(JSON.stringify({ ok, checks, ...(flags.repairSearch ? { repaired } : {}) }, null, 2));
  } else {
    for (const profile of repaired) {
      say(
        profile === 'postgres'
          ? 'Rebuilt the search index of the PostgreSQL store from its stored messages.'
          : `Rebuilt the search index of profile ${profile} from its stored messages.`,
      );
    }
    const c = colours();
    for (const check of checks) {
      say(`${check.ok ? c.green('ok  ') : c.bold(c.red('FAIL'))}  ${check.name}: ${check.detail}`);
      if (check.fix) say(`      ${c.yellow('what to do:')} ${check.fix}`);
    }
    say(ok ? c.green('All checks passed.') : c.red('Some checks failed; see "what to do" above.'));
  }
  if (!ok) process.exitCode = 1;
}
