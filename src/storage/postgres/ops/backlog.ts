/** Storage operations on the inbound backlog on PostgreSQL: events waiting in a session key's queue. */
import type { BacklogRow } from '../../rows/backlog.js';
import type { Sql } from '../database.js';

/** Makes `items` the key's backlog, in order, after the row `keep`, which stays where it is. */
export async function replaceBacklog(
  sql: Sql,
  sessionKey: string,
  keep: string | null,
  items: readonly Omit<BacklogRow, 'session_key' | 'position'>[],
): Promise<void> {
  await sql.run('DELETE FROM inbound_backlog WHERE session_key = $1 AND item_id IS DISTINCT FROM $2', [
    sessionKey,
    keep,
  ]);
  if (items.length === 0) return;
  await sql.run(
    `INSERT INTO inbound_backlog (item_id, session_key, position, kind, event)
     SELECT item, $1, (SELECT coalesce(max(position) + 1, 0) FROM inbound_backlog WHERE session_key = $1) + n - 1,
            kind, event
       FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS i (item, kind, event, n)`,
    [sessionKey, items.map((i) => i.item_id), items.map((i) => i.kind), items.map((i) => i.event)],
  );
}

export async function deleteBacklogItem(sql: Sql, itemId: string): Promise<void> {
  await sql.run('DELETE FROM inbound_backlog WHERE item_id = $1', [itemId]);
}

export function listBacklog(sql: Sql): Promise<BacklogRow[]> {
  return sql.rows<BacklogRow>('SELECT * FROM inbound_backlog ORDER BY session_key, position');
}
