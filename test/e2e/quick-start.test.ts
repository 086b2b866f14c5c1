/**
 * The README's quick start as written (issue 12 items 14, 15): `npm link` puts this project's
 * `gatehouse` on the PATH (into a temporary npm prefix here: the README's `npm config set prefix`,
 * given as npm's environment form of the same setting), and
 * the build it triggers is skipped because `dist/` is already up to date: Gatehouse compiles once.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, realpathSync, statSync } from 'node:fs';
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
  it('documents npm ci && npm link, then plain gatehouse commands, and warns off npx', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    expect(readme).toContain('```sh\nnpm ci && npm link\ngatehouse chat\nnpm test\n```');
    expect(readme).toContain('Do not use `npx gatehouse`');
    expect(readme).toContain('`npm config set prefix ~/.local`');
  });

  it('npm link puts this gatehouse on the PATH of its prefix, reusing the build', async () => {
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
  });
});
