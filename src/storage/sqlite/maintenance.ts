/**
 * Owner maintenance of a state database, outside the daemon: an online backup (`gatehouse backup`),
 * the checks of `gatehouse doctor`, and a rebuild of the derived search index. Each opens its own
 * connection and closes it; backup and checks open read-only, so they are safe while the daemon
 * runs (WAL lets a reader see the last committed state).
 */
import fs from 'node:fs';
import { Database, type SqliteDatabase } from './driver.js';
import { tx } from './actions-common.js';
import { latestVersion, schemaVersion } from './migration.js';
import { MIGRATIONS } from './migrations/index.js';
import { rebuildIndex } from './ops/search-index.js';

export interface Finding {
  ok: boolean;
  detail: string;
}

function openReadOnly(file: string): SqliteDatabase {
  return new Database(file, { readonly: true, fileMustExist: true });
}

function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  return typeof code === 'string' ? `${message} (${code})` : message;
}

/** Pages per backup step: all of them, so the copy is one step (see backupDatabase). */
const ALL_PAGES = 0x7fffffff;

/**
 * SQLite's online backup of `file` into `dest`, created owner-only (0600) and never over an
 * existing file. The pages are copied in one step, inside one read transaction of this process's
 * own connection: a running daemon keeps committing meanwhile (WAL: a reader blocks no writer) and
 * the copy is the last state committed when the step began. Copied in small steps instead, every
 * commit between two steps restarted the copy, and a busy gateway's backup never ended.
 */
export async function backupDatabase(file: string, dest: string): Promise<{ pages: number }> {
  const db = openReadOnly(file);
  // SQLite creates the destination (and its journal) itself: the umask makes them owner-only from birth.
  const previous = process.umask(0o077);
  try {
    fs.closeSync(fs.openSync(dest, 'wx', 0o600));
    const { totalPages } = await db.backup(dest, { progress: () => ALL_PAGES });
    fs.chmodSync(dest, 0o600);
    return { pages: totalPages };
  } finally {
    process.umask(previous);
    db.close();
  }
}

/** `PRAGMA integrity_check` and the schema version: is the canonical store sound? */
export function checkIntegrity(file: string): Finding {
  let db: SqliteDatabase | undefined;
  try {
    db = openReadOnly(file);
    const problems = (db.pragma('integrity_check') as { integrity_check: string }[]).map(
      (row) => row.integrity_check,
    );
    if (problems.length !== 1 || problems[0] !== 'ok') {
      return { ok: false, detail: `integrity_check found: ${problems.slice(0, 3).join('; ')}` };
    }
    const version = schemaVersion(db);
    const known = latestVersion(MIGRATIONS);
    if (version > known) {
      return { ok: false, detail: `schema version ${version} is newer than this Gatehouse (${known})` };
    }
    return { ok: true, detail: `integrity ok, schema version ${version}` };
  } catch (error) {
    return { ok: false, detail: reasonOf(error) };
  } finally {
    db?.close();
  }
}

/**
 * Whether `file` can replace a profile's state database (`gatehouse restore`): a SQLite file that
 * passes integrity_check and carries Gatehouse's schema, no newer than this code.
 */
export function checkRestorable(file: string): Finding {
  let db: SqliteDatabase | undefined;
  try {
    db = openReadOnly(file);
    if (schemaVersion(db) === 0) {
      return { ok: false, detail: 'it is not a Gatehouse state database (no schema_migrations)' };
    }
  } catch (error) {
    return { ok: false, detail: `it is not a readable SQLite database (${reasonOf(error)})` };
  } finally {
    db?.close();
  }
  return checkIntegrity(file);
}

/** FTS5's own integrity check of the search index against the stored messages. */
export function checkSearchIndex(file: string): Finding {
  let db: SqliteDatabase | undefined;
  try {
    // The FTS5 'integrity-check' command is spelt as an INSERT, so it needs a writable handle; it
    // changes nothing.
    db = new Database(file, { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    const state = db.prepare('SELECT stale FROM search_index_state WHERE id = 1').get() as
      { stale: number } | undefined;
    db.prepare("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 0)").run();
    if (state?.stale === 1) return { ok: true, detail: 'marked stale: the next search rebuilds it' };
    return { ok: true, detail: 'search index ok' };
  } catch (error) {
    return { ok: false, detail: reasonOf(error) };
  } finally {
    db?.close();
  }
}

/** Drops and rebuilds the search index from the stored messages (nothing canonical is touched). */
export function rebuildSearchIndexOf(file: string): void {
  const db = new Database(file, { fileMustExist: true });
  try {
    db.pragma('busy_timeout = 5000');
    tx(db, () => rebuildIndex(db));
  } finally {
    db.close();
  }
}
