/** Storage operations on canonical transcript messages on PostgreSQL. Messages are soft-deleted, never erased. */
import type { TranscriptMessage } from '../../../domain/vocabulary.js';
import type { StoredMessage } from '../../../domain/ports/session-store.js';
import { extraJson, messageFromRow, type MessageRow } from '../../rows/messages.js';
import type { Sql } from '../database.js';

const COLUMNS = 'id, session_id, role, content, extra_json, created_at';

/** Inserts messages in order, in one statement; returns them as stored. */
export async function insertMessages(
  sql: Sql,
  sessionId: string,
  messages: readonly TranscriptMessage[],
  now: string,
): Promise<StoredMessage[]> {
  const stamps = messages.map((m) => m.timestamp ?? now);
  const ids = await sql.rows<{ id: number }>(
    `INSERT INTO messages (session_id, role, content, extra_json, created_at)
     SELECT $1, role, content, extra, created FROM unnest($2::text[], $3::text[], $4::text[], $5::text[])
       WITH ORDINALITY AS m (role, content, extra, created, n) ORDER BY n
     RETURNING id`,
    [sessionId, messages.map((m) => m.role), messages.map((m) => m.content), messages.map(extraJson), stamps],
  );
  // Identity values are handed out in insertion order, which follows n.
  const sorted = ids.map((r) => r.id).sort((a, b) => a - b);
  return messages.map((message, i) => ({
    ...message,
    timestamp: stamps[i]!,
    id: sorted[i]!,
    session_id: sessionId,
  }));
}

export async function loadVisibleMessages(sql: Sql, sessionId: string): Promise<StoredMessage[]> {
  const rows = await sql.rows<MessageRow>(
    `SELECT ${COLUMNS} FROM messages WHERE session_id = $1 AND removed_at IS NULL ORDER BY id`,
    [sessionId],
  );
  return rows.map(messageFromRow);
}

export async function loadVisiblePage(
  sql: Sql,
  sessionId: string,
  beforeId: number | null,
  limit: number,
): Promise<StoredMessage[]> {
  const rows = await sql.rows<MessageRow>(
    `SELECT ${COLUMNS} FROM messages
      WHERE session_id = $1 AND removed_at IS NULL AND id < $2 ORDER BY id DESC LIMIT $3`,
    [sessionId, beforeId ?? Number.MAX_SAFE_INTEGER, limit],
  );
  return rows.reverse().map(messageFromRow);
}

export function removeVisibleMessages(
  sql: Sql,
  sessionId: string,
  removedBy: string,
  at: string,
): Promise<number> {
  return sql.run(
    'UPDATE messages SET removed_at = $1, removed_by = $2 WHERE session_id = $3 AND removed_at IS NULL',
    [at, removedBy, sessionId],
  );
}

export function lastUserMessages(
  sql: Sql,
  sessionId: string,
  n: number,
): Promise<{ id: number; content: string | null }[]> {
  return sql.rows(
    `SELECT id, content FROM messages
      WHERE session_id = $1 AND role = 'user' AND removed_at IS NULL ORDER BY id DESC LIMIT $2`,
    [sessionId, n],
  );
}

export async function insertRewindAudit(
  sql: Sql,
  row: {
    sessionId: string;
    at: string;
    turnsRequested: number;
    turnsUndone: number;
    firstMessageId: number;
    targetText: string | null;
    requestKey?: string | null;
  },
): Promise<number> {
  const inserted = await sql.row<{ id: number }>(
    `INSERT INTO rewinds (session_id, rewound_at, turns_requested, turns_undone, rewound_count,
                          first_message_id, target_text, request_key)
     VALUES ($1, $2, $3, $4, 0, $5, $6, $7) RETURNING id`,
    [
      row.sessionId,
      row.at,
      row.turnsRequested,
      row.turnsUndone,
      row.firstMessageId,
      row.targetText,
      row.requestKey ?? null,
    ],
  );
  return inserted!.id;
}

export function findRewindByRequest(
  sql: Sql,
  requestKey: string,
): Promise<{
  session_id: string;
  rewound_count: number;
  turns_undone: number;
  target_text: string | null;
} | null> {
  return sql.row(
    'SELECT session_id, rewound_count, turns_undone, target_text FROM rewinds WHERE request_key = $1',
    [requestKey],
  );
}

export async function rewindFrom(
  sql: Sql,
  sessionId: string,
  fromId: number,
  rewindId: number,
  at: string,
): Promise<number> {
  const changes = await sql.run(
    `UPDATE messages SET removed_at = $1, removed_by = 'rewind', rewind_id = $2
      WHERE session_id = $3 AND id >= $4 AND removed_at IS NULL`,
    [at, rewindId, sessionId, fromId],
  );
  await sql.run('UPDATE rewinds SET rewound_count = $1 WHERE id = $2', [changes, rewindId]);
  return changes;
}

export async function loadVisibleMessagesAfter(
  sql: Sql,
  sessionId: string,
  afterId: number,
): Promise<StoredMessage[]> {
  const rows = await sql.rows<MessageRow>(
    `SELECT ${COLUMNS} FROM messages WHERE session_id = $1 AND id > $2 AND removed_at IS NULL ORDER BY id`,
    [sessionId, afterId],
  );
  return rows.map(messageFromRow);
}

export async function isVisibleMessage(sql: Sql, sessionId: string, id: number): Promise<boolean> {
  return (
    (await sql.row('SELECT 1 FROM messages WHERE id = $1 AND session_id = $2 AND removed_at IS NULL', [
      id,
      sessionId,
    ])) !== null
  );
}

export async function transcriptEdits(sql: Sql, sessionId: string): Promise<number | null> {
  const row = await sql.row<{ transcript_edits: number }>(
    'SELECT transcript_edits FROM sessions WHERE session_id = $1',
    [sessionId],
  );
  return row?.transcript_edits ?? null;
}
