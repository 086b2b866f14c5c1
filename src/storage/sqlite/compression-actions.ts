/**
 * Publishing a compression (SPEC LIN-1) on SQLite, for chat-platform sessions (SessionStore) and
 * local sessions (LocalSessionStore, which adds the receipt to the same transaction).
 */
import type {
  CompressionBackoff,
  CompressionPublication,
  CompressionStep,
} from '../../domain/ports/session-store.js';
import { tx } from './actions-common.js';
import type { SqliteDatabase } from './database.js';
import { appendInTransaction } from './transcript-actions.js';
import * as compression from './ops/compression.js';
import { closeSession } from './ops/sessions.js';

/**
 * Inside the caller's transaction: the child row linked to its parent, its messages, the route moved
 * from parent to child, the parent closed (reason `compression`; its messages stay, and stay
 * searchable) and the backoff cleared. False, with nothing written, when the route no longer points
 * at the parent (a reset or another compression won).
 */
export function publishInTransaction(db: SqliteDatabase, publication: CompressionPublication): boolean {
  const { sessionKey, parentSessionId, childSessionId } = publication;
  const now = publication.now ?? new Date();
  const at = now.toISOString();
  compression.insertChildSession(db, parentSessionId, childSessionId, at, publication.step);
  if (!compression.moveRoute(db, sessionKey, parentSessionId, childSessionId, at)) {
    throw new RouteMoved();
  }
  closeSession(db, parentSessionId, 'compression', at);
  appendInTransaction(db, childSessionId, publication.messages, now);
  if (publication.backoffSubject !== null) compression.clearBackoff(db, publication.backoffSubject);
  return true;
}

/** Thrown inside the transaction to roll the child row back when the route moved. */
export class RouteMoved extends Error {}

/** One transaction around `publishInTransaction` plus `alsoWrite`; false when the route moved. */
export function publishCompression(
  db: SqliteDatabase,
  publication: CompressionPublication,
  alsoWrite: () => void = () => undefined,
): boolean {
  try {
    return tx(db, () => {
      publishInTransaction(db, publication);
      alsoWrite();
      return true;
    });
  } catch (error) {
    if (error instanceof RouteMoved) return false;
    throw error;
  }
}

export function readBackoff(db: SqliteDatabase, subject: string): CompressionBackoff | null {
  return compression.readBackoff(db, subject);
}

export function recordFailure(db: SqliteDatabase, subject: string, backoff: CompressionBackoff): void {
  tx(db, () => compression.writeBackoff(db, subject, backoff));
}

export function compressionStepOf(db: SqliteDatabase, sessionId: string): CompressionStep | null {
  return compression.readCompressionStep(db, sessionId);
}

export function parentOf(db: SqliteDatabase, sessionId: string): string | null {
  return compression.readParentSessionId(db, sessionId);
}
