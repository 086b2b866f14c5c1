/** In-flight turn markers: set when a turn starts, cleared when its reply is durable. */
import type Database from 'better-sqlite3';
import type { TurnMarker, TurnStepRow } from '../../rows/turn-markers.js';
import { statement } from '../statements.js';

type Db = Database.Database;

export function putTurnMarker(
  db: Db,
  sessionKey: string,
  sessionId: string,
  at: Date,
  turnId: string | null = null,
): void {
  statement(
    db,
    `INSERT OR REPLACE INTO turn_markers (session_key, session_id, started_at, started_at_epoch, turn_id)
     VALUES (?, ?, ?, ?, ?)`,
  ).run(sessionKey, sessionId, at.toISOString(), Math.floor(at.getTime() / 1000), turnId);
}

export function setToolStarted(db: Db, sessionKey: string, turnId: string, callId: string | null): void {
  statement(db, 'UPDATE turn_markers SET tool_started = ? WHERE session_key = ? AND turn_id = ?').run(
    callId,
    sessionKey,
    turnId,
  );
}

export function setTurnPrompt(db: Db, sessionKey: string, turnId: string, promptJson: string | null): void {
  statement(db, 'UPDATE turn_markers SET prompt_json = ? WHERE session_key = ? AND turn_id = ?').run(
    promptJson,
    sessionKey,
    turnId,
  );
}

/** The message showing the open prompt `promptId`, into its record; another prompt's is left alone. */
export function setPromptMessage(
  db: Db,
  sessionKey: string,
  turnId: string,
  promptId: string,
  messageId: string,
): void {
  statement(
    db,
    `UPDATE turn_markers SET prompt_json = json_set(prompt_json, '$.message_id', ?)
     WHERE session_key = ? AND turn_id = ? AND json_extract(prompt_json, '$.prompt_id') = ?`,
  ).run(messageId, sessionKey, turnId, promptId);
}

export function readTurnSteps(db: Db, sessionKey: string): TurnStepRow | null {
  const row = statement(
    db,
    `SELECT session_key, session_id, started_at, turn_id, tool_started, prompt_json FROM turn_markers
     WHERE session_key = ? AND turn_id IS NOT NULL`,
  ).get(sessionKey) as TurnStepRow | undefined;
  return row ?? null;
}

export function deleteTurnMarker(db: Db, sessionKey: string): void {
  statement(db, 'DELETE FROM turn_markers WHERE session_key = ?').run(sessionKey);
}

export function listTurnMarkers(db: Db): TurnMarker[] {
  return statement(
    db,
    'SELECT session_key, session_id, started_at_epoch FROM turn_markers ORDER BY session_key',
  ).all() as TurnMarker[];
}

export function deleteAllTurnMarkers(db: Db): void {
  statement(db, 'DELETE FROM turn_markers').run();
}

/** The marker's start in epoch milliseconds (its ISO text is UTC with a zone, so TZ cannot shift it). */
export function readTurnMarkerStartMs(db: Db, sessionKey: string): number | null {
  const row = statement(db, 'SELECT started_at FROM turn_markers WHERE session_key = ?').get(sessionKey) as
    { started_at: string } | undefined;
  return row === undefined ? null : Date.parse(row.started_at);
}
