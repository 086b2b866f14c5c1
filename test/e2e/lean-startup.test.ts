/**
 * Issue 33: a process loads what its configuration uses, and nothing else. The built CLI and daemon
 * run with a loader hook (test/fixtures/record-loads.mjs) that writes every file they load to a
 * file, and each bundle file loaded counts as the modules it holds (test/fixtures/bundle-inputs.ts):
 * `gatehouse --help` and `gatehouse status` load no chat platform SDK, no `pg`, no better-sqlite3
 * and nothing of the dashboard; a daemon on SQLite with no platform loads no platform SDK and no
 * `pg`; one on PostgreSQL loads `pg`; one with Telegram loads grammY (and neither Discord's nor
 * Slack's SDK), and a Telegram section whose token is missing fails with its own message before
 * grammY is loaded; openid-client only with `auth.oidc`. Issue 32: an idle SQLite daemon has not started its
 * checkpoint thread either, nor loaded bash's grammar (its first turn that offers the terminal does).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { loadedModules } from '../fixtures/bundle-inputs.js';
import { CLI, requireBuild, runCli, tempHome } from './cli.js';
import { dropTestSchemas, startDaemon, type RunningDaemon } from './gateway-harness.js';
import { TOKEN_ENV, useTelegramDaemon } from './telegram-fixture.js';

const HOOK = pathToFileURL(resolve(import.meta.dirname, '../fixtures/record-loads.mjs')).href;
/** The build the CLI runs from: its bundle files are read as the modules they hold. */
const DIST = resolve(dirname(CLI), '../..');

/** What a module's URL says it belongs to; each is looked for by name in the assertions. */
const KINDS = {
  grammy: /\/node_modules\/(grammy|@grammyjs\/[^/]+)\//,
  discord: /\/node_modules\/(@discordjs\/[^/]+|discord-api-types|discord\.js)\//,
  slack: /\/node_modules\/@slack\/[^/]+\//,
  pg: /\/node_modules\/pg(-[a-z-]+)?\//,
  'better-sqlite3': /\/node_modules\/better-sqlite3\//,
  /** The metrics (issue 29): prom-client and the module that uses it, only with metrics.enabled. */
  metrics: /\/node_modules\/prom-client\/|\/dist\/daemon\/services\/metrics\.js$/,
  /** The MCP SDK (issue 27): loaded when a configured server is first started, never before. */
  mcp: /\/node_modules\/@modelcontextprotocol\/sdk\//,
  /** The traces (issue 29): OpenTelemetry and the module that uses it, only with telemetry.otlp_endpoint. */
  tracing: /\/node_modules\/@opentelemetry\/|\/dist\/daemon\/services\/tracing\.js$/,
  /** Dashboard sign-in through an identity provider (issue 30): only with auth.oidc. */
  oidc: /\/node_modules\/(openid-client|oauth4webapi|jose)\/|\/dist\/surfaces\/rpc\/oidc-routes\.js$/,
  /** The dashboard's server side and its built page. */
  dashboard: /\/dist\/(surfaces\/)?dashboard\//,
  /**
   * Bash's grammar for the terminal's allow-list (issue 32): WebAssembly, about 6 MiB resident;
   * loaded when a turn that offers the terminal starts, not by an idle daemon.
   */
  bashGrammar: /\/node_modules\/(web-tree-sitter|tree-sitter-bash)\//,
  /** zod's translations of its messages other than English, which is all Gatehouse shows (scripts/bundle.js). */
  zodLocales: /\/node_modules\/zod\/v4\/locales\/(?!en\.js$|index\.js$)/,
  /** The platform adapters (each imports its SDK); not the registry's factories, which check a section first. */
  adapters: /\/dist\/surfaces\/platforms\/(telegram|discord|slack)\/(?!factory\.js$)/,
} as const;
type Kind = keyof typeof KINDS;

const PLATFORM_SDKS: Kind[] = ['grammy', 'discord', 'slack', 'adapters'];

/** A file the hook writes to, the environment that turns the hook on, and what it recorded. */
function recording() {
  const dir = mkdtempSync(join(tmpdir(), 'gh-loads-'));
  const file = join(dir, 'loaded.txt');
  dirs.push(dir);
  return {
    env: { NODE_OPTIONS: `--import ${HOOK}`, GATEHOUSE_RECORD_LOADS: file },
    modules(): string[] {
      if (!existsSync(file)) return [];
      return loadedModules(readFileSync(file, 'utf8').split('\n').filter(Boolean), DIST);
    },
  };
}

/** For each kind asked about, the modules of that kind that were loaded (an empty list: none). */
function loadedOf(modules: string[], kinds: readonly Kind[]): Record<string, string[]> {
  return Object.fromEntries(kinds.map((kind) => [kind, modules.filter((m) => KINDS[kind].test(m))]));
}

function none(kinds: readonly Kind[]): Record<string, string[]> {
  return Object.fromEntries(kinds.map((kind) => [kind, []]));
}

/** The packages under node_modules the modules come from, sorted. */
/** A new session's first turn, to its end: what a turn needs is loaded by then. */
async function firstTurn(client: Awaited<ReturnType<RunningDaemon['connect']>>): Promise<void> {
  const { session_id } = await client.call<{ session_id: string }>('session.create', {
    cwd: mkdtempSync(join(tmpdir(), 'gh-loads-cwd-')),
  });
  await client.call('session.resume', { session_id });
  const done = client.next(
    (n) =>
      n.method === 'session.event' &&
      (n.params as { event: { type: string } }).event.type === 'turn.complete',
    60_000,
  );
  await client.call('prompt.submit', { session_id, submission_id: 's1', text: 'hello' });
  await done;
}

function packages(modules: string[]): string[] {
  const names = modules.flatMap((m) => {
    const match = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(m);
    return match ? [match[1]!] : [];
  });
  return [...new Set(names)].sort();
}

const dirs: string[] = [];
const daemons: RunningDaemon[] = [];
afterEach(async () => {
  for (const daemon of daemons.splice(0)) await daemon.stop();
  await dropTestSchemas();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('commands that only read the home or talk to the daemon load almost nothing', () => {
  it('--help loads commander and no other package; status with no daemon adds only the config parser', async () => {
    requireBuild();
    const home = tempHome();
    dirs.push(dirname(home));
    const help = recording();
    const shown = await runCli(home, ['--help'], { env: help.env });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('serve');
    expect(packages(help.modules())).toEqual(['commander']);
    expect(loadedOf(help.modules(), Object.keys(KINDS) as Kind[])).toEqual(
      none(Object.keys(KINDS) as Kind[]),
    );

    const status = recording();
    const stopped = await runCli(home, ['status'], { env: status.env });
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toContain('Gatehouse is not running');
    // The config is read (YAML, checked by its zod schema) to say which model and store it names.
    expect(packages(status.modules())).toEqual(['commander', 'yaml', 'zod']);
    expect(loadedOf(status.modules(), Object.keys(KINDS) as Kind[])).toEqual(
      none(Object.keys(KINDS) as Kind[]),
    );
  });
});

describe('a daemon loads the store and platforms its configuration names', () => {
  it('on SQLite with no platform: better-sqlite3, no platform SDK, no pg; status beside it loads only commander', async () => {
    requireBuild();
    const loads = recording();
    const daemon = await startDaemon({ env: loads.env });
    daemons.push(daemon);
    const modules = loads.modules();
    const absent: Kind[] = [
      ...PLATFORM_SDKS,
      'pg',
      'metrics',
      'mcp',
      'tracing',
      'oidc',
      'bashGrammar',
      'zodLocales',
    ];
    expect(loadedOf(modules, absent)).toEqual(none(absent));
    // The hook does see what the daemon loads: the store's driver is there.
    expect(loadedOf(modules, ['better-sqlite3'])['better-sqlite3']!.length).toBeGreaterThan(0);

    // Issue 32: nor the WAL checkpointer's thread (a V8 isolate of its own) for the few rows its
    // start-up writes: it starts once writes need it, so the ready daemon has made no checkpoint.
    const client = await daemon.connect();
    const { storage } = await client.call<{ storage: { backend: string; checkpoints: number } }>(
      'runtime.describe',
      {},
    );
    expect(storage).toMatchObject({ backend: 'sqlite', checkpoints: 0 });

    // Beside a running daemon, status reads gateway.json only: not even the config's parser.
    const status = recording();
    const running = await runCli(daemon.home, ['status'], { env: status.env });
    expect(running.stdout).toContain('Gatehouse is running.');
    expect(running.stdout).toMatch(/store: +sqlite \(/);
    expect(packages(status.modules())).toEqual(['commander']);

    // The first turn that offers the terminal loads bash's grammar (the allow-list reads commands with it).
    await firstTurn(client);
    expect(loadedOf(loads.modules(), ['bashGrammar']).bashGrammar!.length).toBeGreaterThan(0);
  });

  it('with metrics.enabled: prom-client', async () => {
    requireBuild();
    const loads = recording();
    const daemon = await startDaemon({ env: loads.env, config: 'metrics:\n  enabled: true\n' });
    daemons.push(daemon);
    expect(loadedOf(loads.modules(), ['metrics']).metrics!.length).toBeGreaterThan(1);
  });

  it('with an MCP server configured: no MCP SDK until a turn first needs its tools, then the SDK', async () => {
    requireBuild();
    const loads = recording();
    const server = resolve(
      import.meta.dirname,
      '../../node_modules/@modelcontextprotocol/server-everything/dist/index.js',
    );
    const config = `mcp_servers:\n  everything:\n    command: ${process.execPath}\n    args: [${server}, stdio]\n`;
    const daemon = await startDaemon({ env: loads.env, config });
    daemons.push(daemon);
    expect(loadedOf(loads.modules(), ['mcp'])).toEqual(none(['mcp']));
    const client = await daemon.connect();
    await firstTurn(client);
    expect(loadedOf(loads.modules(), ['mcp']).mcp!.length).toBeGreaterThan(0);
  });

  it('with telemetry.otlp_endpoint: OpenTelemetry', async () => {
    requireBuild();
    const loads = recording();
    const daemon = await startDaemon({
      env: loads.env,
      config: 'telemetry:\n  otlp_endpoint: http://127.0.0.1:9\n',
    });
    daemons.push(daemon);
    expect(loadedOf(loads.modules(), ['tracing']).tracing!.length).toBeGreaterThan(1);
  });

  it('on PostgreSQL: pg, and no platform SDK', async () => {
    requireBuild();
    const loads = recording();
    const daemon = await startDaemon({ env: loads.env, store: 'postgres' });
    daemons.push(daemon);
    const modules = loads.modules();
    expect(loadedOf(modules, ['pg']).pg!.length).toBeGreaterThan(0);
    expect(loadedOf(modules, PLATFORM_SDKS)).toEqual(none(PLATFORM_SDKS));
  });
});

describe('a daemon with Telegram', () => {
  const telegram = useTelegramDaemon();

  it('whose token variable is not set fails with that message before grammY is loaded', async () => {
    const loads = recording();
    const failed = await runCli(telegram.home, ['serve', '--port', '0'], { env: loads.env });
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain(
      `telegram: the environment variable ${TOKEN_ENV} (platforms.telegram.token_env) holding the bot token is not set`,
    );
    expect(loadedOf(loads.modules(), [...PLATFORM_SDKS, 'pg'])).toEqual(none([...PLATFORM_SDKS, 'pg']));
  });

  it("loads grammY (and the Telegram adapter), and neither Discord's nor Slack's SDK", async () => {
    const loads = recording();
    await telegram.start(loads.env);
    const modules = loads.modules();
    const found = loadedOf(modules, ['grammy', 'adapters', 'discord', 'slack', 'pg']);
    expect(found.grammy!.length).toBeGreaterThan(0);
    expect(found.adapters!.every((m) => m.includes('/platforms/telegram/'))).toBe(true);
    expect(found.adapters!.length).toBeGreaterThan(0);
    expect({ discord: found.discord, slack: found.slack, pg: found.pg }).toEqual({
      discord: [],
      slack: [],
      pg: [],
    });
  });
});
