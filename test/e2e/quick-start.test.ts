/**
 * The README's quick start as written (issue 12 items 14, 15; issue 31 item 13): `npm ci && npm
 * start` opens the chat on the embedded defaults (npm ci itself is not re-run: it would replace the
 * node_modules every test uses), `npm link` as the optional third step puts this project's
 * `gatehouse` on the PATH (into a temporary npm prefix here: the README's `npm config set prefix`,
 * given as npm's environment form of the same setting), and
 * the build it triggers is skipped because `dist/` is already up to date: Gatehouse compiles once.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, finished, requireBuild } from './cli.js';

requireBuild();
const REPO = resolve(import.meta.dirname, '../..');
const STAMP = join(REPO, 'dist', '.build-stamp');

function run(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const child = spawn(command, args, { cwd: REPO, env: { ...process.env, ...env }, stdio: 'pipe' });
  child.stdin.end();
  return finished(child);
}

describe('README quick start', { timeout: 300_000 }, () => {
  it('documents two commands, npm ci && npm start and npm test, npm link as a third, and warns off npx', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    expect(readme).toContain('```sh\nnpm ci && npm start\nnpm test\n```');
    expect(readme).toContain('```sh\nnpm link\n```');
    expect(readme).toContain('Do not use `npx gatehouse`');
    expect(readme).toContain('`npm config set prefix ~/.local`');
  });

  it('npm start opens the chat on the embedded defaults, starting the daemon in a fresh home', async () => {
    const home = join(mkdtempSync(join(tmpdir(), 'gh-start-')), 'home');
    const child = spawn('npm', ['start'], {
      cwd: REPO,
      env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '' },
      stdio: 'pipe',
    });
    child.stdin.end('hello from the quick start\n');
    const chat = await finished(child);
    try {
      expect(chat.code).toBe(0);
      expect(chat.stdout).toContain('you said: hello from the quick start');
      expect(readFileSync(join(home, 'config.yaml'), 'utf8')).toContain('# Gatehouse configuration.');
    } finally {
      await finished(
        spawn(process.execPath, [CLI, 'stop'], { env: { ...process.env, GATEHOUSE_HOME: home } }),
      );
    }
  });

  it('npm link puts this gatehouse on the PATH of its prefix, reusing the build; the uninstall line takes it all away', async () => {
    const fresh = await run(process.execPath, ['scripts/build.js', '--if-stale'], {});
    expect(fresh.code).toBe(0);
    const built = statSync(STAMP).mtimeMs;
    const prefix = mkdtempSync(join(tmpdir(), 'gh-prefix-'));
    const link = await run('npm', ['link', '--no-audit', '--no-fund'], { npm_config_prefix: prefix });
    expect(link.code).toBe(0);
    expect(statSync(STAMP).mtimeMs).toBe(built); // prepare found dist up to date: no second tsc
    const bin = join(prefix, 'bin', 'gatehouse');
    expect(realpathSync(bin)).toBe(realpathSync(CLI));
    const help = await run('gatehouse', ['--help'], {
      PATH: `${join(prefix, 'bin')}${delimiter}${process.env['PATH']}`,
    });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('A crash-safe session gateway for AI agents');
    expect(help.stdout).toContain('doctor');

    // The README's uninstall line, exactly, in a home of its own with a running gateway.
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const uninstall = /To uninstall: `([^`]+)`/.exec(readme)![1]!;
    expect(uninstall).toBe('gatehouse stop; npm rm -g gatehouse; rm -rf ~/.gatehouse');
    const user = mkdtempSync(join(tmpdir(), 'gh-user-'));
    const env = {
      npm_config_prefix: prefix,
      HOME: user,
      GATEHOUSE_HOME: '',
      PATH: `${join(prefix, 'bin')}${delimiter}${process.env['PATH']}`,
    };
    const started = await run('gatehouse', ['start'], env);
    expect(started.code).toBe(0);
    expect(existsSync(join(user, '.gatehouse', 'config.yaml'))).toBe(true);
    const removed = await run('sh', ['-c', uninstall], env);
    expect(removed.code).toBe(0);
    expect(removed.stdout).toContain('Gatehouse stopped');
    expect(existsSync(bin)).toBe(false);
    expect(existsSync(join(user, '.gatehouse'))).toBe(false);
  });
});
