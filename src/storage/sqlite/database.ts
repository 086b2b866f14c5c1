/**
 * Opening the state database (STO-1, STO-5). The file is checked before anything is written: a path
 * that cannot be opened, a file that is not a SQLite database, or a schema newer than this code is
 * refused with a StorageUnavailableError naming the file and the cause. Gatehouse never falls back
 * to an empty store.
 */
import fs from 'node:fs';
import path from 'node:path';
import { GatehouseError, StorageUnavailableError } from '../../domain/errors.js';
import { Database, type SqliteDatabase } from './driver.js';
import { BACKGROUND_SAFETY_PAGES, type CheckpointerOptions } from './checkpointer.js';
import { assertNotTooNew, migrate, schemaVersion, type Migration } from './migration.js';
import { MIGRATIONS } from './migrations/index.js';

export type { SqliteDatabase };

export interface OpenOptions {
  /** Refuse to create the file when it does not exist (a profile that should already have one). */
  mustExist?: boolean;
  /** Tests pass a prefix of the list to build databases at earlier versions. */
  migrations?: readonly Migration[];
  /** How long a writer waits for another connection's lock before failing (ms). */
  busyTimeoutMs?: number;
  /**
   * The log is checkpointed by a background thread (checkpointer.ts), which the caller starts: this
   * connection then checkpoints only as a safety net, far later than usual. Options tune when the
   * thread runs (tests shorten them).
   */
  backgroundCheckpoints?: boolean | CheckpointerOptions;
  /** The page cache's bound, in MiB (`store.sqlite_cache_mb`); default SQLITE_CACHE_MIB. */
  cacheMiB?: number;
}

/**
 * The page cache's default bound, in MiB (SQLite's own default is 2): the hot rows of every live
 * session — sessions, routes, unsettled admissions and their indexes — stay in memory instead of
 * being read back from the OS on each admission. It grows only as pages are touched, so a daemon's
 * RSS grows by up to this much as its database outgrows it, then stays (the soak, docs/benchmarks.md).
 */
export const SQLITE_CACHE_MIB = 64;

/** SQLite's numeric value for synchronous=FULL, as `PRAGMA synchronous` reports it. */
export const SYNCHRONOUS_FULL = 2;

/** Opens (creating if allowed), validates, configures and migrates the database at `file`. */
export function openDatabase(file: string, options: OpenOptions = {}): SqliteDatabase {
  const migrations = options.migrations ?? MIGRATIONS;
  let exists = checkPath(file, options.mustExist ?? false);
  let db: SqliteDatabase | undefined;
  try {
    // A new database is made whole under another name and only then given its own: a crash while
    // it is made leaves no empty state.db behind, so an empty one is always a lost file (below).
    if (!exists && file !== ':memory:' && file !== '') {
      createMigrated(file, migrations);
      exists = true;
    }
    db = new Database(file, { fileMustExist: exists });
    // Reads the header: "file is not a database" surfaces here, before any write.
    const hasSchema = (db.pragma('schema_version', { simple: true }) as number) > 0;
    if (hasSchema && schemaVersion(db) === 0) {
      throw new StorageUnavailableError(
        file,
        'it is a SQLite database of some other program (no schema_migrations)',
      );
    }
    assertNotTooNew(db, file, migrations);
    configure(db, file, {
      busyTimeoutMs: options.busyTimeoutMs ?? 5000,
      backgroundCheckpoints: Boolean(options.backgroundCheckpoints),
      cacheMiB: options.cacheMiB ?? SQLITE_CACHE_MIB,
    });
    migrate(db, file, migrations);
    return db;
  } catch (error) {
    db?.close();
    if (error instanceof GatehouseError) throw error;
    throw new StorageUnavailableError(file, `${describe(error)}${damagedAdvice(file, error)}`, {
      cause: error,
    });
  }
}

/**
 * Creates `file` migrated: owner-only (SQLite gives its -wal and -shm files the database file's
 * mode, so all three hold transcripts readable by the owner alone), written at `<file>.creating`,
 * closed, flushed to disk once, then renamed into place. Nothing reads the file before the rename
 * and a crash before it leaves only `.creating` (removed at the next open), so the migrations run
 * with their journal in memory and without an fsync per migration: one flush of the finished
 * file replaces two dozen.
 */
function createMigrated(file: string, migrations: readonly Migration[]): void {
  const creating = `${file}.creating`;
  for (const leftover of [creating, `${creating}-journal`]) fs.rmSync(leftover, { force: true });
  fs.closeSync(fs.openSync(creating, 'wx', 0o600));
  try {
    const db = new Database(creating, { fileMustExist: true });
    try {
      db.pragma('journal_mode = MEMORY');
      db.pragma('synchronous = OFF');
      db.pragma('foreign_keys = ON');
      migrate(db, file, migrations); // errors name the file the user knows
    } finally {
      db.close();
    }
    flushToDisk(creating);
    fs.renameSync(creating, file);
    flushToDisk(path.dirname(file));
  } catch (error) {
    fs.rmSync(creating, { force: true });
    throw error;
  }
}

/** fsync of a file or a directory (a rename is durable once its directory is flushed). */
function flushToDisk(target: string): void {
  const fd = fs.openSync(target, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Issue 26 item 7: a database file of zero bytes, with no write-ahead log holding its pages, is not
 * a new store but one that lost its contents (a failed copy or restore, a truncation). Opening it
 * would silently start an empty store in its place.
 */
export function emptyDatabaseFile(file: string): boolean {
  try {
    if (fs.statSync(file).size !== 0) return false;
  } catch {
    return false;
  }
  try {
    return fs.statSync(`${file}-wal`).size === 0;
  } catch {
    return true;
  }
}

/** What to do about an empty database file: said at start and by doctor. */
export function emptyDatabaseAdvice(file: string): string {
  return (
    `stop the gateway, restore a backup made by "gatehouse backup" in its place, or move it aside ` +
    `(mv ${file} ${file}.empty) to start with an empty store`
  );
}

function checkPath(file: string, mustExist: boolean): boolean {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !mustExist) return false;
    throw new StorageUnavailableError(file, code === 'ENOENT' ? 'the file does not exist' : describe(error), {
      cause: error,
    });
  }
  if (!stat.isFile()) throw new StorageUnavailableError(file, 'it is not a regular file');
  if (emptyDatabaseFile(file))
    throw new StorageUnavailableError(
      file,
      `the file is empty (0 bytes): its contents were lost, and Gatehouse will not start an empty store in its place; ${emptyDatabaseAdvice(file)}`,
    );
  try {
    fs.accessSync(file, fs.constants.R_OK | fs.constants.W_OK);
  } catch (error) {
    throw new StorageUnavailableError(file, `no permission to read and write it (${describe(error)})`, {
      cause: error,
    });
  }
  return true;
}

function configure(
  db: SqliteDatabase,
  file: string,
  settings: { busyTimeoutMs: number; backgroundCheckpoints: boolean; cacheMiB: number },
): void {
  const { busyTimeoutMs, backgroundCheckpoints, cacheMiB } = settings;
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  const mode = db.pragma('journal_mode = WAL', { simple: true });
  if (mode !== 'wal')
    throw new StorageUnavailableError(file, `cannot switch to WAL mode (got ${String(mode)})`);
  // better-sqlite3 leaves WAL databases at NORMAL, which can lose the last commits on power loss.
  // Everything a client is told about must survive that, so FULL is set and then verified.
  db.pragma('synchronous = FULL');
  const sync = db.pragma('synchronous', { simple: true });
  if (sync !== SYNCHRONOUS_FULL) {
    throw new StorageUnavailableError(file, `synchronous=FULL did not take effect (got ${String(sync)})`);
  }
  db.pragma('foreign_keys = ON');
  // The page cache's bound (SQLITE_CACHE_MIB): negative means a size in KiB, not a page count.
  db.pragma(`cache_size = ${-cacheMiB * 1024}`);
  // Checkpoint every ~16 MiB of WAL instead of every 4 MiB: a checkpoint copies each changed page once
  // however often it changed, so on a busy gateway the hot pages (admission indexes, session rows)
  // are written to the database file four times less often. Recovery reads at most that much WAL.
  db.pragma(`wal_autocheckpoint = ${backgroundCheckpoints ? BACKGROUND_SAFETY_PAGES : 4000}`);
  // TEST-ONLY: caps the database size so tests can simulate a full disk (SQLITE_FULL). max_page_count
  // is per connection, so it has to be set where the connection is opened. Inert when unset.
  const cap = Number(process.env[MAX_PAGE_COUNT_ENV] ?? '');
  if (Number.isInteger(cap) && cap > 0) db.pragma(`max_page_count = ${cap}`);
}

/** Test-only: caps every connection's page count (see configure). Never set in production. */
export const MAX_PAGE_COUNT_ENV = 'GATEHOUSE_TEST_MAX_PAGE_COUNT';

/** What to do about a file SQLite calls damaged or foreign: said where the failure is reported. */
function damagedAdvice(file: string, error: unknown): string {
  const code = (error as { code?: unknown }).code;
  if (typeof code !== 'string' || !/^SQLITE_(CORRUPT|NOTADB)/.test(code)) return '';
  return (
    `: the file is damaged or is not Gatehouse's. Move it aside (mv ${file} ${file}.broken) and ` +
    'restore a backup made by "gatehouse backup" in its place, or start again with an empty store; ' +
    '"gatehouse doctor" checks the home'
  );
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${error.message} (${code})` : error.message;
  }
  return String(error);
}
