/**
 * better-sqlite3, loaded with `require` (issue 32 aim 1). It is a CommonJS package: imported from
 * an ES module, Node first reads its source with a lexer of its own (compiled for that alone) to
 * find the names it exports and builds a module facade around it, which cost about 1.5 MiB of an
 * idle daemon's memory and some of its start-up; `require` loads it as CommonJS directly. The
 * value and its types are the package's own.
 */
import { createRequire } from 'node:module';
import type BetterSqlite3 from 'better-sqlite3';

export const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;

export type SqliteDatabase = BetterSqlite3.Database;
