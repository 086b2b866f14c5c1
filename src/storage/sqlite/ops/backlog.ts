/** Storage operations on the inbound backlog: events waiting in a session key's queue (migration 005). */
import type Database from 'better-sqlite3';
import type { BacklogRow } from '../../rows/backlog.js';
import { statement } from '../statements.js';

type Db = Database.Database;

/**
 * Makes `items` the key's backlog, in order, after the row `keep` (the event whose turn is starting
 * and has not taken it yet), which stays where it is. Every other row of the key is deleted.
 */
export function replaceBacklog(
  db: Db,
  sessionKey: string,
  keep: string | null,
  items: readonly Omit<BacklogRow, 'session_key' | 'position'>[],
): void {
  statement(db, 'DELETE FROM inbound_backlog WHERE session_key = ? AND item_id IS NOT ?').run(
    sessionKey,
    keep,
  );
  const after = statement(
    db,
    'SELECT coalesce(max(position) + 1, 0) FROM inbound_backlog WHERE session_key = ?',
  )
    .pluck()
    .get(sessionKey) as number;
  const put = statement(
    db,
    'INSERT INTO inbound_backlog (item_id, session_key, position, kind, event) VALUES (?, ?, ?, ?, ?)',
  );
  items.forEach((item, i) => put.run(item.item_id, sessionKey, after + i, item.kind, item.event));
}

/** The event's turn started: it no longer waits. */
export function deleteBacklogItem(db: Db, itemId: string): void {
  statement(db, 'DELETE FROM inbound_backlog WHERE item_id = ?').run(itemId);
}

/** Every waiting event, each key's in queue order. */
export function listBacklog(db: Db): BacklogRow[] {
  return statement(db, 'SELECT * FROM inbound_backlog ORDER BY session_key, position').all() as BacklogRow[];
}
