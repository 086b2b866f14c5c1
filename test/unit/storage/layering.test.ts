/**
 * The layering is enforced, not just drawn (issue 33): eslint.config.js refuses, per folder, the
 * imports a layer may not make. These cases lint files placed (virtually) in those folders with the
 * project's own config, so a rule that is dropped or loosened fails here; and the storage folders
 * are read as they are, so no backend imports the other whatever the lint run looked at.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const LAYERING = new Set(['no-restricted-imports', 'no-restricted-syntax']);

let eslint: ESLint;
beforeAll(() => {
  // The layering rules only: they need no type information, so no TypeScript program is built.
  eslint = new ESLint({
    cwd: ROOT,
    overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
    ruleFilter: ({ ruleId }) => LAYERING.has(ruleId),
  });
});

/** The lines of `code`, linted as the file `filePath`, that the layering rules refuse. */
async function refusedLines(filePath: string, code: string): Promise<number[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, filePath) });
  expect(result!.messages.filter((m) => m.fatal === true)).toEqual([]);
  return [...new Set(result!.messages.filter((m) => LAYERING.has(m.ruleId ?? '')).map((m) => m.line))];
}

describe('the layering rules of eslint.config.js', () => {
  it('refuse a driver, a backend or an outer layer in the domain, however it is imported', async () => {
    const code = [
      "import pg from 'pg';",
      "import type Database from 'better-sqlite3';",
      "import { SqliteSessionStore } from '../../storage/sqlite/session-store.js';",
      "import type { RouteRow } from '../../storage/rows/route-row.js';",
      "import type { DaemonContext } from '../../daemon/daemon.js';",
      "export type { PlatformConfig } from '../../surfaces/platforms/registry.js';",
      "export const server = () => import('node:http');",
      "export type Socket = import('ws').WebSocket;",
      "import type { SessionStore } from '../ports/session-store.js';",
      "import { randomUUID } from 'node:crypto';",
      "import type { TranscriptMessage } from '../vocabulary.js';",
    ].join('\n');
    // The chat engine's folder as well as the local one: the rules go by folder, not by file.
    for (const file of ['src/domain/local/fixture.ts', 'src/domain/messaging/fixture.ts']) {
      expect(await refusedLines(file, code)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    }
  });

  it('refuse one storage backend in the other, and allow the shared rows', async () => {
    const postgres = [
      "import { messageFromRow } from '../../sqlite/ops/messages.js';",
      "import Database from 'better-sqlite3';",
      "import { extraJson } from '../../rows/messages.js';",
      "import type { SessionStore } from '../../../domain/ports/session-store.js';",
    ].join('\n');
    expect(await refusedLines('src/storage/postgres/ops/fixture.ts', postgres)).toEqual([1, 2]);
    const sqlite = [
      "import { PostgresDatabase } from '../postgres/database.js';",
      "import pg from 'pg';",
      "import { encodeCursor } from '../rows/cursor.js';",
    ].join('\n');
    expect(await refusedLines('src/storage/sqlite/fixture.ts', sqlite)).toEqual([1, 2]);
    expect(await refusedLines('src/storage/rows/fixture.ts', sqlite)).toEqual([1, 2]);
  });

  it('refuse the daemon and the other platforms in an adapter', async () => {
    const code = [
      "import { DaemonError } from '../../../daemon/errors.js';",
      "import { TelegramAdapter } from '../telegram/adapter.js';",
      "import type { PlatformConfig } from '../registry.js';",
      "import type { PlatformAdapter } from '../../../domain/messaging/adapter.js';",
    ].join('\n');
    expect(await refusedLines('src/surfaces/platforms/slack/fixture.ts', code)).toEqual([1, 2]);
  });

  it('keep the runtime on the vocabulary and the protocol on the typed errors', async () => {
    const code = [
      "import type { SessionStore } from '../domain/ports/session-store.js';",
      "import { DaemonError } from '../daemon/errors.js';",
      "import type { TranscriptMessage } from '../domain/vocabulary.js';",
      "import { NotFoundError } from '../domain/errors.js';",
    ].join('\n');
    expect(await refusedLines('src/runtime/fixture.ts', code)).toEqual([1, 2, 4]);
    expect(await refusedLines('src/protocol/fixture.ts', code)).toEqual([1, 2, 3]);
  });
});

/** Every `.ts` file under `dir`, repo-relative. */
function sources(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)));
}

/** The repo-relative targets of a file's relative imports, exports, `import()` and import types. */
function relativeImports(file: string): string[] {
  const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
  const specifiers = ts.preProcessFile(text, true, true).importedFiles.map((f) => f.fileName);
  for (const match of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) specifiers.push(match[1]!);
  return specifiers
    .filter((s) => s.startsWith('.'))
    .map((s) => path.relative(ROOT, path.resolve(ROOT, path.dirname(file), s)));
}

describe('the storage folders as they are', () => {
  it('hold only the two backends and the rows they share', () => {
    const entries = fs.readdirSync(path.join(ROOT, 'src/storage')).sort();
    expect(entries).toEqual(['postgres', 'rows', 'sqlite']);
  });

  it.each([
    ['postgres', 'sqlite'],
    ['sqlite', 'postgres'],
    ['rows', 'sqlite'],
    ['rows', 'postgres'],
  ])('no file under src/storage/%s imports src/storage/%s', (from, to) => {
    const files = sources(`src/storage/${from}`);
    expect(files.length).toBeGreaterThan(0);
    const crossings = files.flatMap((file) =>
      relativeImports(file)
        .filter((target) => target.startsWith(`src/storage/${to}/`))
        .map((target) => `${file} -> ${target}`),
    );
    expect(crossings).toEqual([]);
  });
});
