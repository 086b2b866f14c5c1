/** Storage operations on canonical transcript messages. Messages are soft-deleted, never erased. */
import type Database from 'better-sqlite3';
import type { TranscriptMessage } from '../../../domain/vocabulary.js';
import type { StoredMessage } from '../../../domain/ports/session-store.js';
import { extraJson, messageFromRow, type MessageRow } from '../../rows/messages.js';
import { statement } from '../statements.js';

type Db = Database.Database;

/** Inserts messages in order; returns them as stored. */
export function insertMessages(
  db: Db,
  sessionId: string,
  messages: readonly TranscriptMessage[],
  now: string,
): StoredMessage[] {
  const insert = statement(
    db,
    'INSERT INTO messages (session_id, role, content, extra_json, created_at) VALUES (?, ?, ?, ?, ?)',
  );
  return messages.map((message) => {
    const createdAt = message.timestamp ?? now;
    const info = insert.run(sessionId, message.role, message.content, extraJson(message), createdAt);
    return { ...message, timestamp: createdAt, id: Number(info.lastInsertRowid), session_id: sessionId };
  });
}

/** The visible transcript, oldest first: loadVisibleMessages, and the transcript JSON thread's read. */
export const VISIBLE_MESSAGES_SQL = `SELECT id, session_id, role, content, extra_json, created_at FROM messages
      WHERE session_id = ? AND removed_at IS NULL ORDER BY id`;

export function loadVisibleMessages(db: Db, sessionId: string): StoredMessage[] {
  const rows = statement(db, VISIBLE_MESSAGES_SQL).all(sessionId) as MessageRow[];
  return rows.map(messageFromRow);
}

/** The visible messages with an id above `afterId`, oldest first, at most `limit`. */
export function loadVisibleSlice(db: Db, sessionId: string, afterId: number, limit: number): StoredMessage[] {
  const rows = statement(
    db,
    `SELECT id, session_id, role, content, extra_json, created_at FROM messages
      WHERE session_id = ? AND removed_at IS NULL AND id > ? ORDER BY id LIMIT ?`,
  ).all(sessionId, afterId, limit) as MessageRow[];
  return rows.map(messageFromRow);
}

/**
 * One page of the visible transcript: the newest `limit` messages older than `beforeId` (all when
 * null), oldest first. Walks messages_by_session backwards, so the cost follows the page, not the
 * transcript.
 */
export function loadVisiblePage(
  db: Db,
  sessionId: string,
  beforeId: number | null,
  limit: number,
): StoredMessage[] {
  const rows = statement(
    db,
    `SELECT id, session_id, role, content, extra_json, created_at FROM messages
      WHERE session_id = ? AND removed_at IS NULL AND id < ? ORDER BY id DESC LIMIT ?`,
  ).all(sessionId, beforeId ?? Number.MAX_SAFE_INTEGER, limit) as MessageRow[];
  return rows.reverse().map(messageFromRow);
}

/** Soft-deletes every visible message of the session (rewrite); returns how many. */
export function removeVisibleMessages(db: Db, sessionId: string, removedBy: string, at: string): number {
  return statement(
    db,
    `UPDATE messages SET removed_at = ?, removed_by = ? WHERE session_id = ? AND removed_at IS NULL`,
  ).run(at, removedBy, sessionId).changes;
}

/** The visible user messages of a session, newest first, at most `n`. */
export function lastUserMessages(
  db: Db,
  sessionId: string,
  n: number,
): { id: number; content: string | null }[] {
  return statement(
    db,
    `SELECT id, content FROM messages
      WHERE session_id = ? AND role = 'user' AND removed_at IS NULL ORDER BY id DESC LIMIT ?`,
  ).all(sessionId, n) as { id: number; content: string | null }[];
}

export function insertRewindAudit(
  db: Db,
  row: {
    sessionId: string;
    at: string;
    turnsRequested: number;
    turnsUndone: number;
    firstMessageId: number;
    targetText: string | null;
    /** The request that asked for it (session.undo, session.retry), so a repeat finds it. */
    requestKey?: string | null;
  },
): number {
  const info = statement(
    db,
    `INSERT INTO rewinds (session_id, rewound_at, turns_requested, turns_undone, rewound_count,
                          first_message_id, target_text, request_key)
     VALUES (?, ?, ?, ?, 0, ?, ?, ?)`,
  ).run(
    row.sessionId,
    row.at,
    row.turnsRequested,
    row.turnsUndone,
    row.firstMessageId,
    row.targetText,
    row.requestKey ?? null,
  );
  return Number(info.lastInsertRowid);
}

/** The rewind a request already made, or null. */
export function findRewindByRequest(
  db: Db,
  requestKey: string,
): { session_id: string; rewound_count: number; turns_undone: number; target_text: string | null } | null {
  const row = statement(
    db,
    'SELECT session_id, rewound_count, turns_undone, target_text FROM rewinds WHERE request_key = ?',
  ).get(requestKey) as
    | { session_id: string; rewound_count: number; turns_undone: number; target_text: string | null }
    | undefined;
  return row ?? null;
}

/** Soft-deletes the visible messages from `fromId` on, tagged with the rewind; records the count. */
export function rewindFrom(db: Db, sessionId: string, fromId: number, rewindId: number, at: string): number {
  const changes = statement(
    db,
    `UPDATE messages SET removed_at = ?, removed_by = 'rewind', rewind_id = ?
      WHERE session_id = ? AND id >= ? AND removed_at IS NULL`,
  ).run(at, rewindId, sessionId, fromId).changes;
  statement(db, 'UPDATE rewinds SET rewound_count = ? WHERE id = ?').run(changes, rewindId);
  return changes;
}

/** The visible messages after `afterId`, in order: what was appended since a copy was taken. */
export function loadVisibleMessagesAfter(db: Db, sessionId: string, afterId: number): StoredMessage[] {
  const rows = statement(
    db,
    `SELECT id, session_id, role, content, extra_json, created_at FROM messages
      WHERE session_id = ? AND id > ? AND removed_at IS NULL ORDER BY id`,
  ).all(sessionId, afterId) as MessageRow[];
  return rows.map(messageFromRow);
}

/** Whether message `id` of the session is still visible. */
export function isVisibleMessage(db: Db, sessionId: string, id: number): boolean {
  return (
    statement(db, 'SELECT 1 FROM messages WHERE id = ? AND session_id = ? AND removed_at IS NULL').get(
      id,
      sessionId,
    ) !== undefined
  );
}

/** How often the session's stored messages changed other than by an append (migration 009); null: no session. */
export function transcriptEdits(db: Db, sessionId: string): number | null {
  const row = statement(db, 'SELECT transcript_edits FROM sessions WHERE session_id = ?').get(sessionId) as
    { transcript_edits: number } | undefined;
  return row?.transcript_edits ?? null;
}
