/** Storage operations on physical sessions (one transcript each). Rows are closed, never deleted. */
import type Database from 'better-sqlite3';
import type { SessionSourceFields } from '../../../domain/vocabulary.js';
import type { LineageRow, SessionRow } from '../../rows/sessions.js';
import { statement } from '../statements.js';

type Db = Database.Database;

export function insertSession(
  db: Db,
  row: {
    sessionId: string;
    sessionKey: string;
    origin: SessionSourceFields | null;
    createdAt: string;
    /** The transcript this one continues (LIN-1..3), and how. */
    parent?: { sessionId: string; kind: 'compression' | 'reset' };
  },
): void {
  const origin = row.origin === null ? null : JSON.stringify(row.origin);
  if (row.parent === undefined) {
    statement(
      db,
      'INSERT INTO sessions (session_id, session_key, origin_json, created_at) VALUES (?, ?, ?, ?)',
    ).run(row.sessionId, row.sessionKey, origin, row.createdAt);
    return;
  }
  statement(
    db,
    `INSERT INTO sessions (session_id, session_key, origin_json, created_at, parent_session_id, lineage_kind)
     VALUES (?, ?, ?, ?, ?, ?)`,
  ).run(row.sessionId, row.sessionKey, origin, row.createdAt, row.parent.sessionId, row.parent.kind);
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

export function readLineageRow(db: Db, sessionId: string): LineageRow | null {
  const row = statement(
    db,
    `SELECT session_id, session_key, created_at, closed_at, closed_reason, parent_session_id, lineage_kind
       FROM sessions WHERE session_id = ?`,
  ).get(sessionId) as Omit<LineageRow, 'children'> | undefined;
  if (row === undefined) return null;
  const children = (
    statement(db, 'SELECT session_id FROM sessions WHERE parent_session_id = ? ORDER BY session_id').all(
      sessionId,
    ) as { session_id: string }[]
  ).map((c) => c.session_id);
  return { ...row, children };
}
