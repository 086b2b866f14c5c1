/** Storage operations on physical sessions (one transcript each). Rows are closed, never deleted. */
import type Database from 'better-sqlite3';
import type { SessionSourceFields } from '../../../domain/vocabulary.js';
import { statement } from '../statements.js';

type Db = Database.Database;

export function insertSession(
  db: Db,
  row: { sessionId: string; sessionKey: string; origin: SessionSourceFields | null; createdAt: string },
): void {
  statement(
    db,
    'INSERT INTO sessions (session_id, session_key, origin_json, created_at) VALUES (?, ?, ?, ?)',
  ).run(
    row.sessionId,
    row.sessionKey,
    row.origin === null ? null : JSON.stringify(row.origin),
    row.createdAt,
  );
}

/** Closes an open session; a session already closed keeps its first closure. */
export function closeSession(db: Db, sessionId: string, reason: string, at: string): void {
  statement(
    db,
    'UPDATE sessions SET closed_at = ?, closed_reason = ? WHERE session_id = ? AND closed_at IS NULL',
  ).run(at, reason, sessionId);
}

/** /resume of an older session: it is current again. */
export function reopenSession(db: Db, sessionId: string, sessionKey: string): void {
  statement(
    db,
    'UPDATE sessions SET closed_at = NULL, closed_reason = NULL, session_key = ? WHERE session_id = ?',
  ).run(sessionKey, sessionId);
}

export interface SessionRow {
  session_id: string;
  session_key: string;
  created_at: string;
  closed_at: string | null;
  closed_reason: string | null;
}

export function readSession(db: Db, sessionId: string): SessionRow | null {
  const row = statement(
    db,
    'SELECT session_id, session_key, created_at, closed_at, closed_reason FROM sessions WHERE session_id = ?',
  ).get(sessionId) as SessionRow | undefined;
  return row ?? null;
}

export function anySessionExists(db: Db): boolean {
  return statement(db, 'SELECT 1 FROM sessions LIMIT 1').get() !== undefined;
}

/** Whether the session has any visible message (a replaced session "had activity"). */
export function sessionHasMessages(db: Db, sessionId: string): boolean {
  return (
    statement(db, 'SELECT 1 FROM messages WHERE session_id = ? AND removed_at IS NULL LIMIT 1').get(
      sessionId,
    ) !== undefined
  );
}
