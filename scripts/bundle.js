/**
 * The daemon and the CLI as bundles (issue 32 aim 1, issue 33's start cost): run by build.js after
 * tsc, over tsc's output. A process that loads some 425 small modules spends about half of its
 * start-up resolving, reading and compiling them one by one; a bundle is a handful of files.
 *
 * - The CLI (src/surfaces/cli/main.ts and all it imports) is one CommonJS bundle,
 *   dist/surfaces/cli/gatehouse.cjs, and the `gatehouse` bin, dist/surfaces/cli/main.js, is
 *   src/surfaces/cli/bin.ts, which compiles that bundle with V8's code cache,
 *   dist/surfaces/cli/gatehouse.cjs.cache. writeCodeCache (build.js runs it last) writes the cache
 *   from one daemon start in a temporary home: everything that start compiled is read from the
 *   cache by every later process instead of being parsed and compiled again (bin.ts says why it
 *   is CommonJS: Node 20 caches code only for a script it compiles through `vm`).
 * - Inside the bundle every `import()` stays lazy: esbuild wraps each module it reaches so that it
 *   runs when first imported (each command, the PostgreSQL store, platform adapters, metrics,
 *   tracing, sign-in…), so a SQLite daemon with no platform still runs none of them.
 * - The isolated worker's process, dist/runtime/isolation/worker-main.js (spawned by
 *   worker-host.ts), and the transcript JSON thread, dist/storage/sqlite/transcript-json-worker.js
 *   (started by transcript-json.ts), stay ES module bundles, each written over tsc's file (an
 *   `import()` in them would go to dist/chunks/).
 * - Bundled packages: the pure-JavaScript ones every daemon loads (BUNDLED). Every other package
 *   stays external and is loaded from node_modules as before: native and WebAssembly ones, which
 *   cannot be bundled, and those only a configuration loads (SDKs, pg, the tokenizer…), which a
 *   lean daemon never loads either way.
 * - Whitespace and syntax are minified, identifiers are not, so a stack (GATEHOUSE_DEBUG) still
 *   names its functions; a source map beside each file maps it back to src/ for
 *   `node --enable-source-maps`.
 * - dist/.bundle.json lists, for each file written, the compiled modules and package files it runs
 *   when it is loaded, so what a process loaded can still be told module by module
 *   (test/fixtures/bundle-inputs.ts): for an ES module file, all it holds; for the CLI's bundle,
 *   those it runs at once, not those its `import()`s run later (test/fixtures/record-loads.mjs
 *   records each of those as it runs). Tests and benches read it, so it is left out of the package
 *   (package.json `files`).
 *
 * tsc's other files stay in dist/ for the library entry (dist/index.js) and its types.
 *
 * Plain JavaScript on purpose: it runs before anything is compiled.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, sep } from 'node:path';
import process from 'node:process';
import { setTimeout, clearTimeout } from 'node:timers';
import vm from 'node:vm';

/** Packages compiled into the bundle: pure JavaScript, loaded by every daemon start. */
export const BUNDLED = ['commander', 'yaml', 'zod', 'ws', 'croner', 'pino'];

/** The ES module bundles, over tsc's files of the same name. */
export const ENTRY_POINTS = ['runtime/isolation/worker-main.js', 'storage/sqlite/transcript-json-worker.js'];

/** The CLI: tsc's main.js is bundled into CLI_BUNDLE, and bin.js becomes the bin (main.js). */
export const CLI_MAIN = 'surfaces/cli/main.js';
export const CLI_BIN_SOURCE = 'surfaces/cli/bin.js';
export const CLI_BUNDLE = 'surfaces/cli/gatehouse.cjs';
export const CLI_CODE_CACHE = `${CLI_BUNDLE}.cache`;
/** What bin.ts reads to write the cache as the build's daemon exits (bin.ts CODE_CACHE_OUT_VARIABLE). */
const CODE_CACHE_OUT_VARIABLE = 'GATEHOUSE_BUILD_CODE_CACHE';

/** The list of the bundle's own files, with what each contains. */
export const BUNDLE_INPUTS = '.bundle.json';

/** The package a bare import names: `zod/mini` → zod, `@slack/web-api/x` → @slack/web-api. */
export function packageOf(specifier) {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/**
 * Leaves to node_modules every package our code imports other than BUNDLED, declared in
 * package.json or not (the discord.js layers the adapter imports are not), and built-ins; what a
 * bundled package imports goes in with it.
 */
const onlyBundledPackages = {
  name: 'only-bundled-packages',
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.importer.includes(`${sep}node_modules${sep}`)) return undefined;
      return BUNDLED.includes(packageOf(args.path)) ? undefined : { path: args.path, external: true };
    });
  },
};

/**
 * zod's translations of its error messages, but English, its default and the only one Gatehouse
 * uses (its messages are part of the config's and the RPC API's errors): `z.locales` re-exports
 * some 50 of them, a third of the zod code every daemon and `status` compiled at start (about 250
 * KB minified). The bundle's `z.locales` holds `en` only; nothing in src/ reads it (the unbundled
 * library entry, dist/index.js, keeps zod whole).
 */
const ENGLISH_ZOD_LOCALES = /[\\/]node_modules[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/;
const englishZodOnly = {
  name: 'english-zod-only',
  setup(build) {
    build.onLoad({ filter: ENGLISH_ZOD_LOCALES }, () => ({
      contents: 'export { default as en } from "./en.js";\n',
      loader: 'js',
    }));
  },
};

/**
 * What a CommonJS package in an ES module bundle needs: esbuild's `require` of a built-in (`fs`)
 * looks for a `require` in scope and throws without one.
 */
const REQUIRE_BANNER =
  "import { createRequire as __gatehouseRequire } from 'node:module'; const require = __gatehouseRequire(import.meta.url);";

/**
 * `import.meta.url` in the CommonJS bundle: its own file's URL, which is what each module's was
 * relative to for all it is used for (createRequire, the package's root).
 */
const IMPORT_META_URL = '__gatehouseImportMetaUrl';

/**
 * The CLI's bundle is the CommonJS wrapper itself, a function expression bin.ts compiles and calls
 * with `exports`, `require`, `module`, `__filename` and `__dirname`: compiling the file's own text,
 * rather than Node's `Module.wrap` of it, keeps one copy of its 2 MB in memory, not two.
 */
const CLI_WRAPPER = {
  // Strict, as the ES modules it was made from were: esbuild's own "use strict" comes after this
  // banner, where it is no longer a directive.
  banner: `(function (exports, require, module, __filename, __dirname) { 'use strict'; const ${IMPORT_META_URL} = require('node:url').pathToFileURL(__filename).href;`,
  footer: '\n})',
};

/**
 * Whether `text` is ASCII: bin.ts reads the CLI's bundle as Latin-1, one byte a character, which V8
 * keeps as a one-byte string (a single character beyond Latin-1 made the whole 2 MB a two-byte
 * string: 4 MB, twice, in an idle daemon).
 */
export function isAscii(text) {
  return !/[\u0080-\uffff]/.test(text);
}

/** What esbuild options every bundle shares. */
function common(root) {
  return {
    absWorkingDir: root,
    bundle: true,
    platform: 'node',
    target: 'node20',
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
    // Like tsc's maps: they name src/ files without carrying them (9.6 MB less in the package).
    sourcesContent: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  };
}

/**
 * The modules of a CommonJS bundle that run only when first imported or required: esbuild names
 * each by its path in the object it wraps it in (`__esm({"dist/…"() {…}})`, `__commonJS(…)`).
 */
export function lazyModules(text) {
  return new Set([...text.matchAll(/__(?:esm|commonJS)\(\{"([^"]+)"/g)].map((match) => match[1]));
}

/** Bundles tsc's output in `root`/dist in place; returns a process exit code. */
export async function bundle(root) {
  const dist = join(root, 'dist');
  const esbuild = await import('esbuild');
  // The last build's chunks are named by their content: none of them is this build's.
  rmSync(join(dist, 'chunks'), { recursive: true, force: true });
  // The last build's cache belongs to the last build's bundle (V8 would refuse it; writeCodeCache
  // writes this build's).
  rmSync(join(dist, CLI_CODE_CACHE), { force: true });
  const modules = await esbuild.build({
    ...common(root),
    entryPoints: ENTRY_POINTS.map((entry) => join(dist, entry)),
    outdir: dist,
    outbase: dist,
    allowOverwrite: true,
    entryNames: '[dir]/[name]',
    chunkNames: 'chunks/[name]-[hash]',
    splitting: true,
    format: 'esm',
    plugins: [onlyBundledPackages, englishZodOnly],
    banner: { js: REQUIRE_BANNER },
  });
  if (modules.errors.length > 0) return 1;
  const cli = await esbuild.build({
    ...common(root),
    entryPoints: [join(dist, CLI_MAIN)],
    outfile: join(dist, CLI_BUNDLE),
    format: 'cjs',
    // An `import()` of an external package (the MCP SDK, web-tree-sitter) becomes a `require` in
    // a promise: every one of them ships CommonJS, and a script compiled through `vm` could run a
    // real `import()` only through an API Node 20 still calls experimental (bin.ts).
    supported: { 'dynamic-import': false },
    define: { 'import.meta.url': IMPORT_META_URL },
    plugins: [onlyBundledPackages, englishZodOnly],
    banner: { js: CLI_WRAPPER.banner },
    footer: { js: CLI_WRAPPER.footer },
  });
  if (cli.errors.length > 0) return 1;
  const dynamic = Object.values(cli.metafile.outputs).flatMap((output) =>
    output.imports.filter((imported) => imported.kind === 'dynamic-import').map((imported) => imported.path),
  );
  if (dynamic.length > 0) {
    process.stderr.write(
      `gatehouse: build: the CLI bundle keeps an import() of ${dynamic.join(', ')} (bin.ts)\n`,
    );
    return 1;
  }
  const bin = await esbuild.build({
    ...common(root),
    entryPoints: [join(dist, CLI_BIN_SOURCE)],
    outfile: join(dist, CLI_MAIN),
    allowOverwrite: true,
    format: 'esm',
  });
  if (bin.errors.length > 0) return 1;
  const cliText = readFileSync(join(dist, CLI_BUNDLE), 'utf8');
  if (!isAscii(cliText)) {
    const at = /[\u0080-\uffff]/.exec(cliText).index;
    process.stderr.write(
      `gatehouse: build: the CLI bundle must be ASCII (bin.ts reads it as Latin-1); escape the character in: ${cliText.slice(at - 60, at + 20)}\n`,
    );
    return 1;
  }
  const lazy = lazyModules(cliText);
  const files = Object.fromEntries(
    [modules, cli, bin].flatMap((result) =>
      Object.entries(result.metafile.outputs)
        .filter(([file]) => /\.c?js$/.test(file))
        .map(([file, output]) => [
          relative(dist, join(root, file)),
          Object.keys(output.inputs).filter((input) => !lazy.has(input)),
        ]),
    ),
  );
  writeFileSync(join(dist, BUNDLE_INPUTS), `${JSON.stringify(files)}\n`);
  return 0;
}

/** The environment of the build's daemon: a temporary home, nothing of a test's or a user's. */
function trainingEnvironment(home, out) {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('GATEHOUSE_')),
  );
  return { ...env, GATEHOUSE_HOME: home, [CODE_CACHE_OUT_VARIABLE]: out };
}

/** Resolves once `child` has printed `text` on stdout; rejects when it exits first or after `ms`. */
function printed(child, text, ms) {
  return new Promise((resolvePrinted, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`no "${text}" within ${ms / 1000} s`)), ms);
    child.stdout.on('data', (chunk) => {
      seen += chunk;
      if (seen.includes(text)) {
        clearTimeout(timer);
        resolvePrinted();
      }
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`it exited (${signal ?? code}) before it was ready`));
    });
  });
}

/**
 * The CLI's code cache (bin.ts): one daemon started from the new bin in a temporary home, on the
 * built-in demo model and port 0, and stopped once ready; it writes the cache of all it compiled as
 * it exits. V8 checks a cache against its flags, so that daemon gets V8's default young-generation
 * growth on its command line (serve would otherwise change it, src/daemon/allocator.ts), and this
 * process, which runs with the defaults, checks that V8 takes the cache before it is kept. Without a
 * cache every command still works, compiling from source: a failure is reported, not fatal.
 */
export async function writeCodeCache(root) {
  const dist = join(root, 'dist');
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-build-'));
  const out = join(dir, 'code-cache');
  try {
    const child = spawn(
      process.execPath,
      ['--semi-space-growth-factor=2', join(dist, CLI_MAIN), 'serve', '--port', '0'],
      { env: trainingEnvironment(join(dir, 'home'), out), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let errors = '';
    child.stderr.on('data', (chunk) => (errors += chunk));
    const exited = new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
    try {
      await printed(child, 'is ready at', 60_000);
    } catch (error) {
      child.kill('SIGKILL');
      throw new Error(`${error.message}${errors ? `: ${errors.trim()}` : ''}`, { cause: error });
    }
    child.kill('SIGTERM');
    if ((await exited) !== 0) throw new Error(`it did not stop cleanly: ${errors.trim()}`);
    const script = new vm.Script(readFileSync(join(dist, CLI_BUNDLE), 'latin1'), {
      filename: join(dist, CLI_BUNDLE),
      cachedData: readFileSync(out),
    });
    if (script.cachedDataRejected) throw new Error('V8 refused the cache it wrote');
    renameSync(out, join(dist, CLI_CODE_CACHE));
    return true;
  } catch (error) {
    process.stderr.write(
      `gatehouse: build: no code cache for the CLI (${error.message}); it compiles from source at each start\n`,
    );
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
