/** A local session's title: set by the owner (`session.title`) or from its first message. */
import type { SqliteDatabase } from '../database.js';
import { statement } from '../statements.js';

/** Sets the title; with `onlyIfUntitled`, only a session that has none. True when a row changed. */
export function writeTitle(
  db: SqliteDatabase,
  logicalId: string,
  title: string,
  onlyIfUntitled: boolean,
): boolean {
  const sql = onlyIfUntitled
    ? 'UPDATE local_sessions SET title = ? WHERE logical_id = ? AND title IS NULL'
    : 'UPDATE local_sessions SET title = ? WHERE logical_id = ?';
  return statement(db, sql).run(title, logicalId).changes > 0;
}
