/** In-flight turn markers on PostgreSQL: set when a turn starts, cleared when its reply is durable. */
import type { TurnMarker, TurnStepRow } from '../../rows/turn-markers.js';
import type { Sql } from '../database.js';

export async function putTurnMarker(
  sql: Sql,
  sessionKey: string,
  sessionId: string,
  at: Date,
  turnId: string | null = null,
): Promise<void> {
  await sql.run(
    `INSERT INTO turn_markers (session_key, session_id, started_at, started_at_epoch, turn_id)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (session_key) DO UPDATE SET session_id = EXCLUDED.session_id,
       started_at = EXCLUDED.started_at, started_at_epoch = EXCLUDED.started_at_epoch,
       turn_id = EXCLUDED.turn_id, tool_started = NULL, prompt_json = NULL`,
    [sessionKey, sessionId, at.toISOString(), Math.floor(at.getTime() / 1000), turnId],
  );
}

export async function setToolStarted(
  sql: Sql,
  sessionKey: string,
  turnId: string,
  callId: string | null,
): Promise<void> {
  await sql.run('UPDATE turn_markers SET tool_started = $1 WHERE session_key = $2 AND turn_id = $3', [
    callId,
    sessionKey,
    turnId,
  ]);
}

/** The message showing the open prompt `promptId`, into its record; another prompt's is left alone. */
export async function setPromptMessage(
  sql: Sql,
  sessionKey: string,
  turnId: string,
  promptId: string,
  messageId: string,
): Promise<void> {
  await sql.run(
    `UPDATE turn_markers SET prompt_json = (prompt_json::jsonb || jsonb_build_object('message_id', $1::text))::text
     WHERE session_key = $2 AND turn_id = $3 AND prompt_json::jsonb ->> 'prompt_id' = $4`,
    [messageId, sessionKey, turnId, promptId],
  );
}

export async function setTurnPrompt(
  sql: Sql,
  sessionKey: string,
  turnId: string,
  promptJson: string | null,
): Promise<void> {
  await sql.run('UPDATE turn_markers SET prompt_json = $1 WHERE session_key = $2 AND turn_id = $3', [
    promptJson,
    sessionKey,
    turnId,
  ]);
}

export function readTurnSteps(sql: Sql, sessionKey: string): Promise<TurnStepRow | null> {
  return sql.row<TurnStepRow>(
    `SELECT session_key, session_id, started_at, turn_id, tool_started, prompt_json FROM turn_markers
     WHERE session_key = $1 AND turn_id IS NOT NULL`,
    [sessionKey],
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
