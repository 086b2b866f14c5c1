/** In-flight turn markers on PostgreSQL: set when a turn starts, cleared when its reply is durable. */
import type { TurnMarker } from '../../sqlite/ops/turn-markers.js';
import type { Sql } from '../database.js';

export async function putTurnMarker(
  sql: Sql,
  sessionKey: string,
  sessionId: string,
  at: Date,
): Promise<void> {
  await sql.run(
    `INSERT INTO turn_markers (session_key, session_id, started_at, started_at_epoch) VALUES ($1, $2, $3, $4)
     ON CONFLICT (session_key) DO UPDATE SET session_id = EXCLUDED.session_id,
       started_at = EXCLUDED.started_at, started_at_epoch = EXCLUDED.started_at_epoch`,
    [sessionKey, sessionId, at.toISOString(), Math.floor(at.getTime() / 1000)],
  );
}

export async function deleteTurnMarker(sql: Sql, sessionKey: string): Promise<void> {
  await sql.run('DELETE FROM turn_markers WHERE session_key = $1', [sessionKey]);
}

export function listTurnMarkers(sql: Sql): Promise<TurnMarker[]> {
  return sql.rows<TurnMarker>(
    'SELECT session_key, session_id, started_at_epoch FROM turn_markers ORDER BY session_key',
  );
}

export async function deleteAllTurnMarkers(sql: Sql): Promise<void> {
  await sql.run('DELETE FROM turn_markers');
}

export async function readTurnMarkerStartMs(sql: Sql, sessionKey: string): Promise<number | null> {
  const row = await sql.row<{ started_at: string }>(
    'SELECT started_at FROM turn_markers WHERE session_key = $1',
    [sessionKey],
  );
  return row === null ? null : Date.parse(row.started_at);
}
