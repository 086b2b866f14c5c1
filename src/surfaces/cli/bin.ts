#!/usr/bin/env node
/**
 * The `gatehouse` bin (dist/surfaces/cli/main.js): runs the CLI's bundle, compiled from the code
 * cache the build wrote beside it (scripts/bundle.js; issue 33's start cost, issue 32's start-up).
 *
 * A process that compiles the CLI from source spends about a third of a daemon's start parsing and
 * compiling JavaScript: the bundle's files as they load, then each function the first time it runs.
 * V8 can save that work as a code cache, but Node 20 offers one only for a script it compiles
 * through `vm`, not for ES modules. So the build also writes the CLI (src/surfaces/cli/main.ts and
 * everything it imports) as one CommonJS bundle, `gatehouse.cjs`, starts a daemon from it once, and
 * keeps the cache of everything that start compiled, `gatehouse.cjs.cache`. Each run compiles the
 * bundle with that cache; V8 checks it against the source, its own version and its flags, and
 * compiles from source as before when it does not match (another Node, a `--flag` on the command
 * line, a cache missing or damaged). Modules of the bundle run only when first imported, as before:
 * esbuild keeps each `import()` lazy.
 *
 * The bundle holds no `import()`: esbuild makes each of an external package a `require` (the build
 * refuses one it cannot), because a script compiled through `vm` can import only through an API
 * Node 20 calls experimental, with a warning on stderr. Nothing is written at run time (dist/ may be
 * read-only).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const here = dirname(fileURLToPath(import.meta.url));
/** The CLI as one CommonJS bundle, beside this file. */
export const BUNDLE = join(here, 'gatehouse.cjs');
/** Its code cache, written by the build. */
export const CODE_CACHE = `${BUNDLE}.cache`;
/**
 * Set by the build only (scripts/bundle.js): the file this process writes the bundle's code cache
 * to as it exits, with everything it compiled by then.
 */
export const CODE_CACHE_OUT_VARIABLE = 'GATEHOUSE_BUILD_CODE_CACHE';

type CommonJsWrapper = (
  exports: unknown,
  require: NodeJS.Require,
  module: { exports: unknown },
  filename: string,
  dirname: string,
) => void;

function readCache(): Buffer | undefined {
  try {
    return readFileSync(CODE_CACHE);
  } catch {
    return undefined;
  }
}

function run(): void {
  const cacheOut = process.env[CODE_CACHE_OUT_VARIABLE];
  delete process.env[CODE_CACHE_OUT_VARIABLE];
  // The bundle is the CommonJS wrapper function, in ASCII (scripts/bundle.js): read one byte a
  // character, it is one string V8 keeps once.
  const script = new vm.Script(readFileSync(BUNDLE, 'latin1'), {
    filename: BUNDLE,
    cachedData: readCache(),
  });
  if (cacheOut) process.once('exit', () => writeFileSync(cacheOut, script.createCachedData()));
  const wrapper = script.runInThisContext() as CommonJsWrapper;
  const module = { exports: {} };
  wrapper.call(module.exports, module.exports, createRequire(BUNDLE), module, BUNDLE, here);
}

run();
