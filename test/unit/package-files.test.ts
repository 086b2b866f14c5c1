/**
 * The package root is found by walking up to a package.json (src/runtime/package-files.ts): the
 * bundled daemon's code runs from dist/chunks/, so it cannot find package.json, dist/dashboard or
 * the worker's entry relative to its own file as tsc's layout allowed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { nearestPackageRoot, packageFile } from '../../src/runtime/package-files.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('the package root', () => {
  it('is the nearest folder with a package.json, from a chunk, a compiled module or the root itself', () => {
    const root = mkdtempSync(join(tmpdir(), 'gh-pkg-'));
    dirs.push(root);
    writeFileSync(join(root, 'package.json'), '{}');
    for (const dir of ['dist/chunks', 'dist/runtime/isolation'])
      mkdirSync(join(root, dir), { recursive: true });
    expect(nearestPackageRoot(join(root, 'dist/chunks'))).toBe(root);
    expect(nearestPackageRoot(join(root, 'dist/runtime/isolation'))).toBe(root);
    expect(nearestPackageRoot(root)).toBe(root);
  });

  it("is this checkout's root when run from src/: package.json there is Gatehouse's", () => {
    expect(packageFile('package.json')).toBe(join(import.meta.dirname, '../../package.json'));
  });
});
