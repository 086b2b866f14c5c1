/** Storage operations of context compression (LIN-1) on PostgreSQL: the child transcript, its link, the backoff. */
import type { CompressionBackoff, CompressionStep } from '../../../domain/ports/session-store.js';
import { decodeCompressionStep, encodeCompressionStep } from '../../rows/compression-step.js';
import type { Sql } from '../database.js';

export async function insertChildSession(
  sql: Sql,
  parentId: string,
  childId: string,
  at: string,
  step: CompressionStep | undefined,
): Promise<void> {
  await sql.run(
    `INSERT INTO sessions (session_id, session_key, origin_json, created_at, parent_session_id, lineage_json)
     SELECT $1, session_key, origin_json, $2, session_id, $4 FROM sessions WHERE session_id = $3`,
    [childId, at, parentId, encodeCompressionStep(step)],
  );
}

/** A compression child's record (migration 024), or null. */
export async function readCompressionStep(sql: Sql, sessionId: string): Promise<CompressionStep | null> {
  const row = await sql.row<{ lineage_json: string | null }>(
    'SELECT lineage_json FROM sessions WHERE session_id = $1',
    [sessionId],
  );
  return decodeCompressionStep(row?.lineage_json);
}

export async function readParentSessionId(sql: Sql, sessionId: string): Promise<string | null> {
  const row = await sql.row<{ parent_session_id: string | null }>(
    'SELECT parent_session_id FROM sessions WHERE session_id = $1',
    [sessionId],
  );
  return row?.parent_session_id ?? null;
}

export async function moveRoute(
  sql: Sql,
  sessionKey: string,
  fromId: string,
  toId: string,
  at: string,
): Promise<boolean> {
  const changed = await sql.run(
    'UPDATE routes SET session_id = $1, updated_at = $2 WHERE session_key = $3 AND session_id = $4',
    [toId, at, sessionKey, fromId],
  );
  return changed === 1;
}

export async function readBackoff(sql: Sql, subject: string): Promise<CompressionBackoff | null> {
  const row = await sql.row<{ failures: number; retry_after: string; last_error: string }>(
    'SELECT failures, retry_after, last_error FROM compression_backoff WHERE subject = $1',
    [subject],
  );
  return row === null
    ? null
    : { failures: row.failures, retryAfter: row.retry_after, lastError: row.last_error };
}

export async function writeBackoff(sql: Sql, subject: string, backoff: CompressionBackoff): Promise<void> {
  await sql.run(
    `INSERT INTO compression_backoff (subject, failures, retry_after, last_error) VALUES ($1, $2, $3, $4)
     ON CONFLICT (subject) DO UPDATE SET failures = EXCLUDED.failures, retry_after = EXCLUDED.retry_after,
       last_error = EXCLUDED.last_error`,
    [subject, backoff.failures, backoff.retryAfter, backoff.lastError],
  );
}

export async function clearBackoff(sql: Sql, subject: string): Promise<void> {
  await sql.run('DELETE FROM compression_backoff WHERE subject = $1', [subject]);
}
