import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MigrationFailedError, SchemaTooNewError } from '../../../src/domain/errors.js';
import { openDatabase } from '../../../src/storage/sqlite/database.js';
import { latestVersion, schemaVersion, type Migration } from '../../../src/storage/sqlite/migration.js';
import { MIGRATIONS } from '../../../src/storage/sqlite/migrations/index.js';
import { insertSession } from '../../../src/storage/sqlite/ops/sessions.js';

let dir: string;
let file: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-mig-'));
  file = path.join(dir, 'state.db');
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

const LATEST = latestVersion(MIGRATIONS);

/** A later migration as others will add them, to prove upgrades from every earlier version. */
const LATER: Migration = {
  version: LATEST + 1,
  name: 'test_receipts',
  up(db) {
    db.exec(
      'CREATE TABLE test_receipts (id TEXT PRIMARY KEY, session_id TEXT REFERENCES sessions (session_id))',
    );
  },
};
const ALL = [...MIGRATIONS, LATER];

function schemaOf(f: string): unknown[] {
  const db = new Database(f, { readonly: true });
  const rows = db.prepare(`SELECT type, name, sql FROM sqlite_schema ORDER BY type, name`).all();
  db.close();
  return rows;
}

describe('STO-6 schema migrations', () => {
  it('migrations are numbered in increasing order from 1', () => {
    const versions = MIGRATIONS.map((m) => m.version);
    expect(versions[0]).toBe(1);
    expect(versions).toEqual([...new Set(versions)].sort((a, b) => a - b));
  });

  it('a migration numbered below one already applied still runs (numbers land out of order)', () => {
    const first = MIGRATIONS[0]!;
    const late: Migration = { version: 3, name: 'lands_late', up: (db) => db.exec('CREATE TABLE late (x)') };
    const after: Migration = { version: 4, name: 'landed_first', up: (db) => db.exec('CREATE TABLE t4 (x)') };
    openDatabase(file, { migrations: [first, after] }).close();
    const db = openDatabase(file, { migrations: [first, late, after] });
    expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all()).toEqual([
      1, 3, 4,
    ]);
    expect(db.prepare(`SELECT name FROM sqlite_schema WHERE name = 'late'`).pluck().get()).toBe('late');
    db.close();
  });

  it('an empty database is migrated to the latest version, recorded in schema_migrations', () => {
    const db = openDatabase(file);
    expect(schemaVersion(db)).toBe(LATEST);
    expect(db.prepare('SELECT version, name FROM schema_migrations').all()).toEqual(
      MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
    );
    db.close();
  });

  it.each(ALL.map((_, k) => k))(
    'upgrades from version %i to the same schema as a fresh database, keeping data',
    (k) => {
      const fresh = path.join(dir, 'fresh.db');
      openDatabase(fresh, { migrations: ALL }).close();

      const old = openDatabase(file, { migrations: ALL.slice(0, k) });
      if (k >= 1) insertSession(old, { sessionId: 's1', sessionKey: 'k', origin: null, createdAt: 'now' });
      old.close();
      const db = openDatabase(file, { migrations: ALL });
      expect(schemaVersion(db)).toBe(LATEST + 1);
      if (k >= 1) expect(db.prepare('SELECT session_id FROM sessions').pluck().all()).toEqual(['s1']);
      db.close();
      expect(schemaOf(file)).toEqual(schemaOf(fresh));
    },
  );

  it('a database newer than the code is refused with a clear message and left unchanged', () => {
    openDatabase(file, { migrations: ALL }).close();
    const before = fs.readFileSync(file);
    let error: unknown;
    try {
      openDatabase(file);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SchemaTooNewError);
    const message = (error as Error).message;
    expect(message).toContain(file);
    expect(message).toContain(`schema is version ${LATEST + 1}`);
    expect(message).toContain(`only knows up to version ${LATEST}`);
    expect(fs.readFileSync(file).equals(before)).toBe(true);
  });

  it('a failing migration rolls back entirely and the database stays usable at its version', () => {
    openDatabase(file).close();
    const failing: Migration = {
      version: LATEST + 1,
      name: 'breaks_halfway',
      up(db) {
        db.exec('CREATE TABLE half_done (x)');
        db.exec('INSERT INTO sessions_typo VALUES (1)');
      },
    };
    expect(() => openDatabase(file, { migrations: [...MIGRATIONS, failing] })).toThrow(MigrationFailedError);
    const db = openDatabase(file);
    expect(schemaVersion(db)).toBe(LATEST);
    expect(db.prepare(`SELECT name FROM sqlite_schema WHERE name = 'half_done'`).get()).toBeUndefined();
    db.close();
  });

  it('a failing first migration leaves no database file behind (a new one appears only whole)', () => {
    const failing: Migration = {
      version: 1,
      name: 'boom',
      up: () => {
        throw new Error('boom');
      },
    };
    expect(() => openDatabase(file, { migrations: [failing] })).toThrow(/migration 1 \(boom\) failed.*boom/);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(`${file}.creating`)).toBe(false);
  });
});
