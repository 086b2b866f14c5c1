#!/usr/bin/env node
/**
 * The one build: `tsc -p tsconfig.build.json`, the daemon and CLI bundled over tsc's output
 * (scripts/bundle.js), the dashboard page, then a stamp in dist/. With `--if-stale` (what
 * `prepare`, `npm start`, `npm link`, `bench` and `torture` use) it does nothing when the stamp is
 * newer than every source and config file, so a fresh clone compiles once during `npm ci` and
 * never again until something changes. `npm run build` always compiles.
 *
 * With `--no-check` tsc emits without type-checking (`--noCheck`: the same JavaScript, no second
 * type-check): what `npm test` (scripts/check.js, which type-checks once on its own) and `prepare`
 * use. Plain `npm run build` type-checks as it compiles.
 *
 * Plain JavaScript on purpose: it runs before anything is compiled.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { bundle, writeCodeCache } from './bundle.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const STAMP = join(root, 'dist', '.build-stamp');
// scripts/bundle.js decides what dist/ holds as much as src/ does.
const INPUTS = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/bundle.js'];

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** Why dist needs building, or null when it is up to date. */
export function staleReason(base = root) {
  const stamp = join(base, 'dist', '.build-stamp');
  if (!existsSync(stamp)) return 'dist has not been built yet';
  const built = statSync(stamp).mtimeMs;
  for (const input of INPUTS) {
    const path = join(base, input);
    if (existsSync(path) && newestMtime(path) > built) return `${input} changed since the last build`;
  }
  return null;
}

async function main() {
  const ifStale = process.argv.includes('--if-stale');
  const noCheck = process.argv.includes('--no-check');
  if (ifStale) {
    const reason = staleReason();
    if (reason === null) return 0;
    process.stderr.write(`gatehouse: building (${reason}); tsc and the dashboard bundle take about 30 s\n`);
  }
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const args = [tsc, '-p', join(root, 'tsconfig.build.json'), ...(noCheck ? ['--noCheck'] : [])];
  const run = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (run.status !== 0) return run.status ?? 1;
  // Over tsc's output, before anything runs it: dist/surfaces/cli/main.js becomes the bin, which
  // runs the CLI's bundle (bundle.js).
  if ((await bundle(root)) !== 0) return 1;
  // The dashboard page: plain TypeScript bundled by vite into dist/dashboard (docs/dashboard.md).
  const web = join(root, 'src', 'surfaces', 'dashboard', 'web');
  const vite = spawnSync(
    process.execPath,
    [
      join(root, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      web,
      '--config',
      join(web, 'vite.config.mjs'),
      '--logLevel',
      'warn',
    ],
    { stdio: 'inherit' },
  );
  if (vite.status !== 0) return vite.status ?? 1;
  // Last, from the finished build: a daemon started once writes the CLI's code cache (bundle.js).
  await writeCodeCache(root);
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  return 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
