import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StorageUnavailableError } from '../../../src/domain/errors.js';
import { openDatabase, SYNCHRONOUS_FULL } from '../../../src/storage/sqlite/database.js';
import { SqliteSessionStore } from '../../../src/storage/sqlite/session-store.js';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-open-'));
});
afterEach(() => {
  fs.chmodSync(dir, 0o700);
  fs.rmSync(dir, { recursive: true, force: true });
});

function refusal(fn: () => unknown): StorageUnavailableError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(StorageUnavailableError);
    return error as StorageUnavailableError;
  }
  throw new Error('expected a StorageUnavailableError');
}

describe('STO-1 durable configuration', () => {
  it('opens in WAL mode with synchronous=FULL (2), foreign keys and a busy timeout', () => {
    const db = openDatabase(path.join(dir, 'state.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(SYNCHRONOUS_FULL);
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('busy_timeout', { simple: true })).toBeGreaterThan(0);
    db.close();
  });

  it('bounds its page cache at 64 MiB: the memory it fills as the database grows (the soak) stops there', () => {
    const db = openDatabase(path.join(dir, 'state.db'));
    // Negative: a size in KiB, not pages. The daemon's RSS grows by this much at most as its
    // database outgrows the cache (docs/benchmarks.md, the soak), then stays.
    expect(db.pragma('cache_size', { simple: true })).toBe(-64 * 1024);
    db.close();
  });

  it('takes another bound for its page cache (store.sqlite_cache_mb)', () => {
    const db = openDatabase(path.join(dir, 'state.db'), { cacheMiB: 8 });
    expect(db.pragma('cache_size', { simple: true })).toBe(-8 * 1024);
    db.close();
  });
});

describe('STO-5 a database that cannot be used is refused, nothing written', () => {
  it('a file that is not a database stays byte-identical, with no WAL or journal created', () => {
    const file = path.join(dir, 'state.db');
    const garbage = Buffer.from('this is not a sqlite database, it is a shopping list\n'.repeat(200));
    fs.writeFileSync(file, garbage);
    const error = refusal(() => SqliteSessionStore.open(file));
    expect(error.reason).toBe('storage_unavailable');
    expect(error.message).toContain(file);
    expect(error.message).toMatch(/not a database/);
    expect(fs.readFileSync(file).equals(garbage)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual(['state.db']);
  });

  it('a path inside a file (not a directory) names the file and the cause', () => {
    const blocker = path.join(dir, 'home');
    fs.writeFileSync(blocker, 'x');
    const file = path.join(blocker, 'state.db');
    const error = refusal(() => openDatabase(file));
    expect(error.message).toContain(file);
    expect(error.message).toMatch(/ENOTDIR|not a directory/);
    expect(fs.readFileSync(blocker, 'utf8')).toBe('x');
  });

  it('a directory where the file should be is refused', () => {
    const file = path.join(dir, 'state.db');
    fs.mkdirSync(file);
    expect(refusal(() => openDatabase(file)).message).toContain('not a regular file');
  });

  it('a missing file is refused when it must exist, and not created', () => {
    const file = path.join(dir, 'state.db');
    expect(refusal(() => openDatabase(file, { mustExist: true })).message).toContain('does not exist');
    expect(fs.existsSync(file)).toBe(false);
  });

  it.skipIf(process.getuid?.() === 0)('an unreadable directory is refused with the cause', () => {
    const file = path.join(dir, 'state.db');
    openDatabase(file).close();
    fs.chmodSync(dir, 0o000);
    const error = refusal(() => openDatabase(file));
    expect(error.message).toContain(file);
  });

  it('an unreadable file is refused (root: an existing file without permission bits is still opened)', () => {
    const file = path.join(dir, 'state.db');
    openDatabase(file).close();
    const before = fs.readFileSync(file);
    fs.chmodSync(file, 0o000);
    if (process.getuid?.() === 0) {
      // root bypasses permission bits; the open must then succeed and see the same data.
      openDatabase(file).close();
    } else {
      expect(refusal(() => openDatabase(file)).message).toMatch(/permission/);
      fs.chmodSync(file, 0o600);
      expect(fs.readFileSync(file).equals(before)).toBe(true);
    }
  });

  it('a SQLite file of some other program is refused, byte-identical', () => {
    const file = path.join(dir, 'state.db');
    const other = new Database(file);
    other.exec('CREATE TABLE sessions (x); INSERT INTO sessions VALUES (1)');
    other.close();
    const before = fs.readFileSync(file);
    const error = refusal(() => openDatabase(file));
    expect(error.message).toMatch(/some other program/);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual(['state.db']);
  });
});
