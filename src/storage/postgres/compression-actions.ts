/** Publishing a compression (SPEC LIN-1) on PostgreSQL, inside the caller's transaction. */
import type { CompressionPublication } from '../../domain/ports/session-store.js';
import type { PgDatabase, Sql } from './database.js';
import * as compression from './ops/compression.js';
import { closeSession } from './ops/sessions.js';
import { appendInTransaction } from './transcript-actions.js';

/** Thrown inside the transaction to roll the child row back when the route moved. */
export class RouteMoved extends Error {}

/**
 * The child row linked to its parent, its messages, the route moved from parent to child, the
 * parent closed (reason `compression`) and the backoff cleared. Throws RouteMoved (the caller rolls
 * back and answers false) when the route no longer points at the parent.
 */
export async function publishInTransaction(
  db: PgDatabase,
  sql: Sql,
  publication: CompressionPublication,
): Promise<void> {
  const { sessionKey, parentSessionId, childSessionId } = publication;
  const now = publication.now ?? new Date();
  const at = now.toISOString();
  await compression.insertChildSession(sql, parentSessionId, childSessionId, at, publication.step);
  if (!(await compression.moveRoute(sql, sessionKey, parentSessionId, childSessionId, at)))
    throw new RouteMoved();
  await closeSession(sql, parentSessionId, 'compression', at);
  await appendInTransaction(db, sql, childSessionId, publication.messages, now);
  if (publication.backoffSubject !== null) await compression.clearBackoff(sql, publication.backoffSubject);
}

/** One transaction around publishInTransaction plus `alsoWrite`; false when the route moved. */
export async function publishCompression(
  db: PgDatabase,
  publication: CompressionPublication,
  alsoWrite: (sql: Sql) => Promise<void> = () => Promise.resolve(),
): Promise<boolean> {
  try {
    await db.transaction(async (sql) => {
      await publishInTransaction(db, sql, publication);
      await alsoWrite(sql);
    });
    return true;
  } catch (error) {
    if (error instanceof RouteMoved) return false;
    throw error;
  }
}
