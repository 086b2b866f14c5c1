/** Shared plumbing of the SQLite store's actions: transactions and session ids. */
import { randomBytes } from 'node:crypto';
import { NotFoundError } from '../../domain/errors.js';
import { newSessionId } from '../../domain/session/lifecycle.js';
import type { SqliteDatabase } from './database.js';
import * as sessions from './ops/sessions.js';

/** One IMMEDIATE transaction: the write lock is taken up front, so concurrent writers queue, never deadlock. */
export function tx<T>(db: SqliteDatabase, fn: () => T): T {
  return db.transaction(fn).immediate();
}

export function newId(now: Date): string {
  return newSessionId(now, randomBytes(4).toString('hex'));
}

export function requireSession(db: SqliteDatabase, sessionId: string): void {
  if (sessions.readSession(db, sessionId) === null) {
    throw new NotFoundError(`no stored session ${JSON.stringify(sessionId)}`);
  }
}
