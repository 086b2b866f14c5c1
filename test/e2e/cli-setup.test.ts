/**
 * The command line around the chat (issue 31 item 13): `gatehouse --version`, shell completion run
 * in a real bash, `gatehouse config get|set` on the real config file (validated, comments kept), and
 * `gatehouse restore` as the counterpart of `gatehouse backup`, through the built CLI and the daemon
 * it starts in a temp home — each exactly as docs/daemon.md shows it.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_YAML, homeLayout } from '../../src/daemon/home.js';
import { CLI, isOneLineError, requireBuild, runCli, tempHome } from './cli.js';
import { tempDir } from './seed-fixture.js';

beforeAll(requireBuild);
const REPO = resolve(import.meta.dirname, '../..');

const homes: string[] = [];
afterEach(async () => {
  await Promise.all(homes.splice(0).map((home) => runCli(home, ['stop'])));
});

/** What bash completes after `line` (the cursor at its end) with the script `gatehouse completion bash` prints. */
function complete(script: string, line: string): string[] {
  const words = line.split(' ');
  const program = [
    script,
    `COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')})`,
    `COMP_CWORD=${words.length - 1}`,
    '_gatehouse',
    'printf "%s\\n" "${COMPREPLY[@]}"',
  ].join('\n');
  const run = spawnSync('bash', ['-c', program], { encoding: 'utf8' });
  expect(run.stderr).toBe('');
  return run.stdout.split('\n').filter((w) => w !== '');
}

describe('gatehouse --version and completion', { timeout: 60_000 }, () => {
  it('prints the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string };
    const run = await runCli(tempHome(), ['--version']);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe(`${version}\n`);
  });

  it('completes commands, subcommands and options in bash; zsh and fish scripts name the same tree', async () => {
    const bash = await runCli(tempHome(), ['completion', 'bash']);
    expect(bash.code).toBe(0);
    expect(complete(bash.stdout, 'gatehouse st')).toEqual(['start', 'stop', 'status']);
    expect(complete(bash.stdout, 'gatehouse jobs ru')).toEqual(['run-now']);
    expect(complete(bash.stdout, 'gatehouse jobs add --cr')).toEqual(['--cron']);
    expect(complete(bash.stdout, 'gatehouse config s')).toEqual(['set']);
    expect(complete(bash.stdout, 'gatehouse chat --res')).toEqual(['--resume']);
    expect(complete(bash.stdout, 'gatehouse completion ')).toEqual(['bash', 'zsh', 'fish', '--help']);
    expect(complete(bash.stdout, 'gatehouse --ver')).toEqual(['--version']);

    const zsh = await runCli(tempHome(), ['completion', 'zsh']);
    expect(zsh.stdout).toContain('bashcompinit');
    expect(zsh.stdout).toContain('complete -o default -F _gatehouse gatehouse');
    const fish = await runCli(tempHome(), ['completion', 'fish']);
    expect(fish.stdout).toContain(
      'complete -c gatehouse -n "__fish_seen_subcommand_from jobs; and __fish_seen_subcommand_from add" -l cron',
    );
    expect(fish.stdout).toMatch(/-a restore -d 'put a backup back/);

    // Loaded as docs/daemon.md shows it, with `gatehouse` on the PATH.
    const docs = readFileSync(join(REPO, 'docs', 'daemon.md'), 'utf8');
    const load = /Load it with `(eval "\$\(gatehouse completion bash\)")`/.exec(docs)![1]!;
    const bin = tempDir();
    writeFileSync(join(bin, 'gatehouse'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, {
      mode: 0o755,
    });
    const loaded = spawnSync('bash', ['-c', `${load}\ncomplete -p gatehouse`], {
      encoding: 'utf8',
      env: { ...process.env, PATH: `${bin}:${process.env['PATH']}` },
    });
    expect(loaded.stdout).toBe('complete -o default -F _gatehouse gatehouse\n');

    const other = await runCli(tempHome(), ['completion', 'tcsh']);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain('Allowed choices are bash, zsh, fish');
  });
});

describe('gatehouse config get|set', { timeout: 60_000 }, () => {
  it('sets a key keeping every comment, refuses what the daemon would refuse, and gets the effective value', async () => {
    const home = tempHome();
    const layout = homeLayout(home);
    expect((await runCli(home, ['config', 'get', 'drain_timeout_s'])).stdout).toBe('30\n');
    const unset = await runCli(home, ['config', 'get', 'listener.port']);
    expect(unset.stderr).toBe('gatehouse: listener.port is not set and has no default\n');

    // As docs/daemon.md shows it.
    const set = await runCli(home, ['config', 'set', 'sessions.max_age_days', '30']);
    expect(set.code).toBe(0);
    expect(set.stdout).toBe(`sessions.max_age_days: 30 (written to ${layout.configFile})\n`);
    const text = readFileSync(layout.configFile, 'utf8');
    expect(text).toContain('# The profile this gateway serves');
    expect(text).toContain('mode: default      # default | detect | deny | off (docs/approvals.md)');
    // One line added where it belongs; every other byte as it was.
    expect(text).toBe(
      DEFAULT_CONFIG_YAML.replace(
        'thread_sessions_per_user: false\n',
        'thread_sessions_per_user: false\n  max_age_days: 30\n',
      ),
    );
    expect((await runCli(home, ['config', 'get', 'sessions.max_age_days'])).stdout).toBe('30\n');
    expect((await runCli(home, ['config', 'get', 'approvals'])).stdout).toContain('mode: default\n');

    const refusals: [string[], string][] = [
      [['set', 'listener.port', 'lots'], 'listener.port'],
      [['set', 'listener.nope', '1'], 'listener.nope: unknown key'],
      [['set', 'model.api_key', 'sk-secret'], 'holds a secret'],
      [['set', 'listener..port', '1'], 'is not a config key'],
      [['get', 'listener.nope'], 'listener.nope is not a config key'],
    ];
    for (const [args, says] of refusals) {
      const run = await runCli(home, ['config', ...args]);
      expect(run.code, args.join(' ')).not.toBe(0);
      expect(isOneLineError(run.stderr), run.stderr).toBe(true);
      expect(run.stderr).toContain(says);
      expect(readFileSync(layout.configFile, 'utf8')).toBe(text); // bad input changes nothing
    }
    expect(readFileSync(layout.configFile, 'utf8')).not.toContain('sk-secret');
  });
});

describe('gatehouse restore', { timeout: 180_000 }, () => {
  it('puts a backup back while the gateway is stopped, keeps the replaced database, and refuses what it cannot use', async () => {
    const home = tempHome();
    homes.push(home);
    const layout = homeLayout(home);
    const first = await runCli(home, ['chat'], { input: 'before the backup\n' });
    expect(first.code).toBe(0);
    const backup = join(tempDir(), 'state-copy.db');
    expect((await runCli(home, ['backup', backup])).stdout).toContain(
      `To restore it: gatehouse stop, then gatehouse restore ${backup}\n`,
    );
    expect((await runCli(home, ['chat'], { input: 'after the backup\n' })).code).toBe(0);

    const running = await runCli(home, ['restore', backup]);
    expect(running.code).not.toBe(0);
    expect(isOneLineError(running.stderr)).toBe(true);
    expect(running.stderr).toContain('run "gatehouse stop" first');

    expect((await runCli(home, ['stop'])).code).toBe(0);
    const before = readFileSync(layout.stateDb('default'));
    const notDb = join(tempDir(), 'notes.db');
    writeFileSync(notDb, 'just some text, not a database at all');
    for (const [file, says] of [
      [notDb, 'cannot be restored: it is not a readable SQLite database'],
      [join(tempDir(), 'missing.db'), 'does not exist'],
    ] as const) {
      const run = await runCli(home, ['restore', file]);
      expect(run.code).not.toBe(0);
      expect(isOneLineError(run.stderr), run.stderr).toBe(true);
      expect(run.stderr).toContain(says);
      expect(readFileSync(layout.stateDb('default')).equals(before)).toBe(true);
    }

    const restored = await runCli(home, ['restore', backup]);
    expect(restored.code).toBe(0);
    expect(restored.stdout).toContain(`Restored ${backup} as the default profile's database`);
    const kept = readdirSync(join(home, 'backups')).filter((f) => f.startsWith('default-before-restore-'));
    expect(kept).toHaveLength(1);

    const listed = await runCli(home, ['sessions', '--search', 'backup', '--json']);
    expect(listed.code).toBe(0);
    const snippets = (JSON.parse(listed.stdout) as { hits: { snippet: string }[] }).hits.map(
      (h) => h.snippet,
    );
    expect(snippets).toContain('before the [backup]');
    expect(snippets.join('\n')).not.toContain('after the');
  });
});
