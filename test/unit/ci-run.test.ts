/**
 * `.ci/run` installs the Debian packages the browser and metrics tests need while `npm ci` runs,
 * logging the install to a temp file: that file is gone when the run ends, whether the install
 * succeeded (the log is dropped), failed (printed, then dropped) or the tests failed.
 *
 * Run for real with `bash`, in a copy of the repository whose `pg_isready`, `apt-get` and `npm` are
 * stand-ins on PATH; in a private mount namespace (root only) /usr/bin/chromium and prometheus are
 * hidden, so the script takes its install branch whatever this machine has.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SCRIPT = resolve(import.meta.dirname, '../../.ci/run');
const PACKAGES = ['/usr/bin/chromium', '/usr/bin/prometheus'];

const canHide =
  process.getuid?.() === 0 &&
  spawnSync('unshare', ['--mount', '--propagation', 'private', 'true']).status === 0;

function stub(dir: string, name: string, body: string): void {
  const path = join(dir, name);
  writeFileSync(path, `#!/usr/bin/env bash\n${body}\n`);
  chmodSync(path, 0o755);
}

/** Runs a copy of .ci/run with apt-get exiting `aptStatus` and `npm test` exiting `testStatus`. */
function runCi(aptStatus: number, testStatus: number) {
  const root = mkdtempSync(join(tmpdir(), 'gh-ci-run-'));
  mkdirSync(join(root, 'repo', '.ci'), { recursive: true });
  copyFileSync(SCRIPT, join(root, 'repo', '.ci', 'run'));
  const bin = join(root, 'bin');
  mkdirSync(bin);
  const calls = join(root, 'calls');
  stub(bin, 'pg_isready', 'exit 0');
  stub(bin, 'apt-get', `echo "apt-get $*"; echo "apt-get $*" >>'${calls}'; exit ${aptStatus}`);
  stub(bin, 'npm', `echo "npm $*" >>'${calls}'; [ "$1" = test ] && exit ${testStatus}; exit 0`);
  const temp = join(root, 'tmp');
  mkdirSync(temp);
  const hidden = join(root, 'hidden');
  writeFileSync(hidden, '');
  chmodSync(hidden, 0o644);
  const hide = PACKAGES.filter((p) => existsSync(p))
    .map((p) => `mount --bind '${hidden}' '${p}' && `)
    .join('');
  const run = spawnSync(
    'unshare',
    [
      '--mount',
      '--propagation',
      'private',
      'bash',
      '-c',
      `${hide}exec bash '${join(root, 'repo', '.ci', 'run')}'`,
    ],
    { env: { PATH: `${bin}:${process.env.PATH ?? ''}`, TMPDIR: temp }, encoding: 'utf8' },
  );
  const result = {
    status: run.status,
    output: run.stdout + run.stderr,
    calls: existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n') : [],
    leftInTmp: readdirSync(temp),
  };
  rmSync(root, { recursive: true, force: true });
  return result;
}

describe.skipIf(!canHide)('.ci/run', () => {
  it('installs the missing packages while npm ci runs, then tests, and leaves no log behind', () => {
    const run = runCi(0, 0);
    expect(run.status).toBe(0);
    expect(run.output).toContain('ci: installed chromium prometheus');
    expect(run.calls).toEqual(
      expect.arrayContaining([
        'apt-get update',
        'apt-get install -y chromium prometheus',
        'npm ci',
        'npm test',
      ]),
    );
    expect(run.calls.at(-1)).toBe('npm test');
    expect(run.leftInTmp).toEqual([]);
  });

  it('prints the log of a failed install, stops before the tests, and leaves no log behind', () => {
    const run = runCi(100, 0);
    expect(run.status).toBe(1);
    expect(run.output).toContain('apt-get update');
    expect(run.output).toContain('ci: installing chromium prometheus failed (its log is above)');
    expect(run.calls).not.toContain('npm test');
    expect(run.leftInTmp).toEqual([]);
  });

  it("keeps the tests' exit status, and leaves no log behind", () => {
    const run = runCi(0, 3);
    expect(run.status).toBe(3);
    expect(run.leftInTmp).toEqual([]);
  });
});
