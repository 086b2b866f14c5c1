/**
 * The CLI's code cache (src/surfaces/cli/bin.ts, scripts/bundle.js): the build leaves a cache V8
 * takes for the bundle beside it, the bundle holds no `import()` (a script compiled through `vm`
 * could run one only through an experimental API), and the bin still runs every command when the
 * cache is missing, damaged or refused for a flag, compiling from source.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CLI, requireBuild } from '../e2e/cli.js';

const cliDir = dirname(CLI);
const BUNDLE = join(cliDir, 'gatehouse.cjs');
const CACHE = `${BUNDLE}.cache`;
const PACKAGE = join(cliDir, '../../../package.json');
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The bin and its bundle copied into a package of their own, with `cache` as the bundle's cache. */
function copiedBin(cache: Buffer | null): string {
  const root = mkdtempSync(join(tmpdir(), 'gh-code-cache-'));
  dirs.push(root);
  const dir = join(root, 'dist', 'surfaces', 'cli');
  mkdirSync(dir, { recursive: true });
  copyFileSync(PACKAGE, join(root, 'package.json'));
  copyFileSync(CLI, join(dir, 'main.js'));
  copyFileSync(BUNDLE, join(dir, 'gatehouse.cjs'));
  if (cache) writeFileSync(join(dir, 'gatehouse.cjs.cache'), cache);
  return join(dir, 'main.js');
}

function version(bin: string, flags: string[] = []) {
  return spawnSync(process.execPath, [...flags, bin, '--version'], { encoding: 'utf8' });
}

describe('the CLI code cache', () => {
  it('is built beside the bundle and V8 takes it, with the default flags', () => {
    requireBuild();
    // In a process of its own, as the bin runs: a test in this worker may have set V8 flags (the
    // allocator's tests do), and V8 checks a cache against the flags of the process that reads it.
    const check = [
      "const { readFileSync } = require('node:fs');",
      "const vm = require('node:vm');",
      `const script = new vm.Script(readFileSync(${JSON.stringify(BUNDLE)}, 'latin1'), {`,
      `  filename: ${JSON.stringify(BUNDLE)}, cachedData: readFileSync(${JSON.stringify(CACHE)}) });`,
      'process.stdout.write(String(script.cachedDataRejected));',
    ].join('\n');
    const run = spawnSync(process.execPath, ['-e', check], { encoding: 'utf8' });
    expect({ code: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
      code: 0,
      stdout: 'false',
      stderr: '',
    });
  });

  it('is ASCII and holds no import(): every lazy import of a package is a require', () => {
    requireBuild();
    const text = readFileSync(BUNDLE, 'utf8');
    expect(text).not.toMatch(/[\u0080-\uffff]/);
    expect(text).not.toMatch(/\bimport\(/);
    expect(text).toMatch(/require\("@modelcontextprotocol\/sdk\/client\/index\.js"\)/);
  });

  it('runs every command without it, with a damaged one, and with one refused for a flag', () => {
    requireBuild();
    const expected = `${(JSON.parse(readFileSync(PACKAGE, 'utf8')) as { version: string }).version}\n`;
    for (const run of [
      version(copiedBin(null)),
      version(copiedBin(Buffer.from('not a code cache at all'))),
      version(copiedBin(readFileSync(CACHE).subarray(0, 4096))),
      version(copiedBin(readFileSync(CACHE)), ['--no-opt']),
      version(CLI),
    ]) {
      expect({ code: run.status, stdout: run.stdout, stderr: run.stderr }).toEqual({
        code: 0,
        stdout: expected,
        stderr: '',
      });
    }
  });
});
