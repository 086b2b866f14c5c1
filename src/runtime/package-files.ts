/**
 * Where the installed package's own files are (package.json, dist/dashboard, the isolated worker's
 * entry). A module cannot say it by its own URL: the built daemon is one bundle split into chunks
 * (scripts/bundle.js), so the code of, say, worker-host.ts runs from dist/chunks/…, not from
 * dist/runtime/isolation. The package root is the nearest folder above this module holding a
 * package.json, the same from src/ (tests), dist/ and dist/chunks/; it is looked for once, when first
 * asked, so a process that never needs it never looks.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let root: string | undefined;

/** The nearest folder at or above `dir` that holds a package.json (the folder itself at the top). */
export function nearestPackageRoot(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'package.json'))) return at;
    if (dirname(at) === at) return dir;
  }
}

/** A file of the installed package, by its path from the package root (`dist/dashboard`). */
export function packageFile(...parts: string[]): string {
  root ??= nearestPackageRoot(dirname(fileURLToPath(import.meta.url)));
  return join(root, ...parts);
}
