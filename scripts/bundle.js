/**
 * The daemon and the CLI as one bundle (issue 32 aim 1, issue 33's start cost): run by build.js
 * after tsc, over tsc's output. A process that loads some 425 small modules spends about half of
 * its start-up resolving, reading and compiling them one by one; the bundle is a handful of files.
 *
 * - The entry points keep their compiled paths: dist/surfaces/cli/main.js (the `gatehouse` bin,
 *   what tests and benches run) and dist/runtime/isolation/worker-main.js (the isolated worker's
 *   process, spawned by worker-host.ts). esbuild writes each over tsc's file.
 * - Code splitting: every `import()` stays a file of its own loaded on demand (each command, the
 *   PostgreSQL store, platform adapters, metrics, tracing, sign-in…), so a SQLite daemon with no
 *   platform still loads none of them; code two of them share goes to dist/chunks/.
 * - Bundled packages: the pure-JavaScript ones every daemon loads (BUNDLED). Every other package
 *   stays external and is loaded from node_modules as before: native and WebAssembly ones, which
 *   cannot be bundled, and those only a configuration loads (SDKs, pg, the tokenizer…), which a
 *   lean daemon never loads either way.
 * - Whitespace and syntax are minified, identifiers are not, so a stack (GATEHOUSE_DEBUG) still
 *   names its functions; a source map beside each file maps it back to src/ for
 *   `node --enable-source-maps`.
 * - dist/.bundle.json lists, for each file written, the compiled modules and package files in it,
 *   so what a process loaded can still be told module by module (test/fixtures/bundle-inputs.ts);
 *   tests and benches read it, so it is left out of the package (package.json `files`).
 *
 * tsc's other files stay in dist/ for the library entry (dist/index.js) and its types.
 *
 * Plain JavaScript on purpose: it runs before anything is compiled.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';

/** Packages compiled into the bundle: pure JavaScript, loaded by every daemon start. */
export const BUNDLED = ['commander', 'yaml', 'zod', 'ws', 'croner', 'pino'];

export const ENTRY_POINTS = ['surfaces/cli/main.js', 'runtime/isolation/worker-main.js'];

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

/** Bundles tsc's output in `root`/dist in place; returns a process exit code. */
export async function bundle(root) {
  const dist = join(root, 'dist');
  const esbuild = await import('esbuild');
  // The last build's chunks are named by their content: none of them is this build's.
  rmSync(join(dist, 'chunks'), { recursive: true, force: true });
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: ENTRY_POINTS.map((entry) => join(dist, entry)),
    outdir: dist,
    outbase: dist,
    allowOverwrite: true,
    entryNames: '[dir]/[name]',
    chunkNames: 'chunks/[name]-[hash]',
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    plugins: [onlyBundledPackages, englishZodOnly],
    banner: { js: REQUIRE_BANNER },
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
    // Like tsc's maps: they name src/ files without carrying them (9.6 MB less in the package).
    sourcesContent: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  if (result.errors.length > 0) return 1;
  const files = Object.fromEntries(
    Object.entries(result.metafile.outputs)
      .filter(([file]) => file.endsWith('.js'))
      .map(([file, output]) => [relative(dist, join(root, file)), Object.keys(output.inputs)]),
  );
  writeFileSync(join(dist, BUNDLE_INPUTS), `${JSON.stringify(files)}\n`);
  return 0;
}
