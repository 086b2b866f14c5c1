/** Storage operations on physical sessions on PostgreSQL. Rows are closed, never deleted. */
import type { SessionSourceFields } from '../../../domain/vocabulary.js';
import type { LineageRow, SessionRow } from '../../rows/sessions.js';
import type { Sql } from '../database.js';

export async function insertSession(
  sql: Sql,
  row: {
    sessionId: string;
    sessionKey: string;
    origin: SessionSourceFields | null;
    createdAt: string;
    parent?: { sessionId: string; kind: 'compression' | 'reset' };
  },
): Promise<void> {
  await sql.run(
    `INSERT INTO sessions (session_id, session_key, origin_json, created_at, parent_session_id, lineage_kind)
     VALUES ($1, $2, $3, $4, $5, $6)`,
    [
      row.sessionId,
      row.sessionKey,
      row.origin === null ? null : JSON.stringify(row.origin),
      row.createdAt,
      row.parent?.sessionId ?? null,
      row.parent?.kind ?? null,
    ],
  );
}

export async function closeSession(sql: Sql, sessionId: string, reason: string, at: string): Promise<void> {
  await sql.run(
    'UPDATE sessions SET closed_at = $1, closed_reason = $2 WHERE session_id = $3 AND closed_at IS NULL',
    [at, reason, sessionId],
  );
}

export async function reopenSession(sql: Sql, sessionId: string, sessionKey: string): Promise<void> {
  await sql.run(
    'UPDATE sessions SET closed_at = NULL, closed_reason = NULL, session_key = $1 WHERE session_id = $2',
    [sessionKey, sessionId],
  );
}

export function readSession(sql: Sql, sessionId: string): Promise<SessionRow | null> {
  return sql.row<SessionRow>(
    'SELECT session_id, session_key, created_at, closed_at, closed_reason FROM sessions WHERE session_id = $1',
    [sessionId],
  );
}

export async function anySessionExists(sql: Sql): Promise<boolean> {
  return (await sql.row('SELECT 1 FROM sessions LIMIT 1')) !== null;
}

export async function sessionHasMessages(sql: Sql, sessionId: string): Promise<boolean> {
  return (
    (await sql.row('SELECT 1 FROM messages WHERE session_id = $1 AND removed_at IS NULL LIMIT 1', [
      sessionId,
    ])) !== null
  );
}

export async function readLineageRow(sql: Sql, sessionId: string): Promise<LineageRow | null> {
  const row = await sql.row<Omit<LineageRow, 'children'>>(
    `SELECT session_id, session_key, created_at, closed_at, closed_reason, parent_session_id, lineage_kind
       FROM sessions WHERE session_id = $1`,
    [sessionId],
  );
  if (row === null) return null;
  const children = await sql.rows<{ session_id: string }>(
    'SELECT session_id FROM sessions WHERE parent_session_id = $1 ORDER BY session_id',
    [sessionId],
  );
  return { ...row, children: children.map((c) => c.session_id) };
}

/** How many sessions and messages the schema holds: doctor's proof that it can read them. */
export async function countStored(sql: Sql): Promise<{ sessions: number; messages: number }> {
  const row = await sql.row<{ sessions: number; messages: number }>(
    'SELECT (SELECT count(*) FROM sessions)::bigint AS sessions, (SELECT count(*) FROM messages)::bigint AS messages',
  );
  return row ?? { sessions: 0, messages: 0 };
}
