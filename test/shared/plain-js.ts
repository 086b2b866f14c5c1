/**
 * Crash tests start a child process dozens of times. Under `--import tsx` each start pays for the
 * TypeScript loader (about half a second on a busy 2-core machine), so the sources are transpiled
 * once to plain ESM in a temp dir instead (type stripping only; the type-check is `npm test`'s job).
 * A `node_modules` link next to the output lets the children resolve dependencies as usual.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const repo = fileURLToPath(new URL('../../', import.meta.url));

function transpileTree(fromDir: string, toDir: string): void {
  for (const entry of fs.readdirSync(fromDir, { withFileTypes: true })) {
    const from = path.join(fromDir, entry.name);
    if (entry.isDirectory()) {
      transpileTree(from, path.join(toDir, entry.name));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
      const { outputText } = ts.transpileModule(fs.readFileSync(from, 'utf8'), {
        compilerOptions: {
          module: ts.ModuleKind.ESNext,
          target: ts.ScriptTarget.ES2022,
          verbatimModuleSyntax: true,
        },
        fileName: from,
      });
      fs.mkdirSync(toDir, { recursive: true });
      fs.writeFileSync(path.join(toDir, entry.name.replace(/\.ts$/, '.js')), outputText);
    }
  }
}

/** Transpiles src/ and test/fixtures/ into a fresh temp dir; returns it and a cleanup function. */
export function buildPlainJs(): { dir: string; fixture(name: string): string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-js-'));
  transpileTree(path.join(repo, 'src'), path.join(dir, 'src'));
  transpileTree(path.join(repo, 'test', 'fixtures'), path.join(dir, 'test', 'fixtures'));
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type":"module"}\n');
  fs.symlinkSync(path.join(repo, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return {
    dir,
    fixture: (name) => path.join(dir, 'test', 'fixtures', name.replace(/\.ts$/, '.js')),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
