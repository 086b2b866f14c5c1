/** Shared plumbing of the SQLite store's actions: transactions and session ids. */
import { randomBytes } from 'node:crypto';
import { NotFoundError, StorageUnavailableError } from '../../domain/errors.js';
import { newSessionId } from '../../domain/session/lifecycle.js';
import type { SqliteDatabase } from './database.js';
import * as sessions from './ops/sessions.js';
import { transactionRunner } from './statements.js';

/** One IMMEDIATE transaction: the write lock is taken up front, so concurrent writers queue, never deadlock. */
export function tx<T>(db: SqliteDatabase, fn: () => T): T {
  try {
    return transactionRunner(db).immediate(fn) as T;
  } catch (error) {
    throw asStorageUnavailable(db, error);
  }
}

/**
 * SQLite failures that say the store itself cannot be written right now (disk full, I/O error, a
 * lock another process holds past busy_timeout, a read-only file) become StorageUnavailableError,
 * so a client gets `storage_unavailable` instead of an internal error. The transaction rolled back:
 * nothing it would have written was acknowledged.
 */
const UNAVAILABLE = ['SQLITE_FULL', 'SQLITE_IOERR', 'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_READONLY'];

export function asStorageUnavailable(db: SqliteDatabase, error: unknown): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string' || !UNAVAILABLE.some((c) => code === c || code.startsWith(`${c}_`))) {
    return error;
  }
  const why = code === 'SQLITE_FULL' ? 'the disk (or the database size limit) is full' : code;
  return new StorageUnavailableError(db.name, `${why} (${code})`, { cause: error });
}

export function newId(now: Date): string {
  return newSessionId(now, randomBytes(4).toString('hex'));
}

export function requireSession(db: SqliteDatabase, sessionId: string): void {
  if (sessions.readSession(db, sessionId) === null) {
    throw new NotFoundError(`no stored session ${JSON.stringify(sessionId)}`);
  }
}

/**
 * Runs a synchronous store operation and answers with a promise, as the contracts ask. It runs at
 * once, in the caller's tick: a thrown error becomes a rejection, never a synchronous throw.
 */
export function answer<T>(operation: () => T): Promise<T> {
  try {
    return Promise.resolve(operation());
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}
