/** Storage operations of context compression (LIN-1): the child transcript, its link, the backoff. */
import type Database from 'better-sqlite3';
import type { CompressionBackoff, CompressionStep } from '../../../domain/ports/session-store.js';
import { decodeCompressionStep, encodeCompressionStep } from '../../rows/compression-step.js';
import { statement } from '../statements.js';

type Db = Database.Database;

/** The child transcript's row: same key and origin as its parent, linked to it. */
export function insertChildSession(
  db: Db,
  parentId: string,
  childId: string,
  at: string,
  step: CompressionStep | undefined,
): void {
  statement(
    db,
    `INSERT INTO sessions (session_id, session_key, origin_json, created_at, parent_session_id, lineage_json)
     SELECT ?, session_key, origin_json, ?, session_id, ? FROM sessions WHERE session_id = ?`,
  ).run(childId, at, encodeCompressionStep(step), parentId);
}

/** A compression child's record (migration 024), or null. */
export function readCompressionStep(db: Db, sessionId: string): CompressionStep | null {
  const row = statement(db, 'SELECT lineage_json FROM sessions WHERE session_id = ?').get(sessionId) as
    { lineage_json: string | null } | undefined;
  return decodeCompressionStep(row?.lineage_json);
}

/** The transcript a compression child was made from, or null (not a child, or no such session). */
export function readParentSessionId(db: Db, sessionId: string): string | null {
  const row = statement(db, 'SELECT parent_session_id FROM sessions WHERE session_id = ?').get(sessionId) as
    { parent_session_id: string | null } | undefined;
  return row?.parent_session_id ?? null;
}

/** Points a route from `fromId` to `toId`; false (nothing changed) when it no longer points at `fromId`. */
export function moveRoute(db: Db, sessionKey: string, fromId: string, toId: string, at: string): boolean {
  const info = statement(
    db,
    'UPDATE routes SET session_id = ?, updated_at = ? WHERE session_key = ? AND session_id = ?',
  ).run(toId, at, sessionKey, fromId);
  return info.changes === 1;
}

export function readBackoff(db: Db, subject: string): CompressionBackoff | null {
  const row = statement(
    db,
    'SELECT failures, retry_after, last_error FROM compression_backoff WHERE subject = ?',
  ).get(subject) as { failures: number; retry_after: string; last_error: string } | undefined;
  return row === undefined
    ? null
    : { failures: row.failures, retryAfter: row.retry_after, lastError: row.last_error };
}

export function writeBackoff(db: Db, subject: string, backoff: CompressionBackoff): void {
  statement(
    db,
    `INSERT INTO compression_backoff (subject, failures, retry_after, last_error) VALUES (?, ?, ?, ?)
     ON CONFLICT (subject) DO UPDATE SET failures = excluded.failures, retry_after = excluded.retry_after,
       last_error = excluded.last_error`,
  ).run(subject, backoff.failures, backoff.retryAfter, backoff.lastError);
}

export function clearBackoff(db: Db, subject: string): void {
  statement(db, 'DELETE FROM compression_backoff WHERE subject = ?').run(subject);
}
