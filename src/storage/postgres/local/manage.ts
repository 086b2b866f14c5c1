/** Archiving, forks and deletion of local sessions (issue 31), on PostgreSQL (as local/manage.ts of SQLite). */
import { localSessionKey, receiptKey } from '../../../domain/local/receipt.js';
import type { DeleteResult, LocalSessionRow, TurnRecord } from '../../../domain/ports/local-store.js';
import { TURN_RECORD_SELECT, turnRecordFromRow, type TurnRecordDbRow } from '../../rows/admissions.js';
import { localSessionFromRow, type LocalSessionDbRow } from '../../rows/local-sessions.js';
import type { Sql } from '../database.js';

export async function setArchived(sql: Sql, logicalId: string, archivedAt: string | null): Promise<boolean> {
  return (
    (await sql.run('UPDATE local_sessions SET archived_at = $1 WHERE logical_id = $2', [
      archivedAt,
      logicalId,
    ])) > 0
  );
}

export async function setForkedFrom(
  sql: Sql,
  logicalId: string,
  from: string,
  messageId: number,
): Promise<void> {
  await sql.run('UPDATE local_sessions SET forked_from = $1, forked_message_id = $2 WHERE logical_id = $3', [
    from,
    messageId,
    logicalId,
  ]);
}

export async function forksOf(sql: Sql, logicalId: string): Promise<LocalSessionRow[]> {
  const rows = await sql.rows<LocalSessionDbRow>(
    'SELECT * FROM local_sessions WHERE forked_from = $1 ORDER BY created_at COLLATE "C", logical_id COLLATE "C"',
    [logicalId],
  );
  return rows.map(localSessionFromRow);
}

/**
 * Removes a session and everything stored for it (its transcripts, index rows, receipt, admissions,
 * costs, budget pause, shares). Kept on purpose: the audit trail (append-only) and the budget spend
 * records (a principal's daily limit still counts what a deleted session spent), which hold its id
 * but no text; test/e2e/session-manage.test.ts scans every table for anything else. Runs inside the
 * caller's transaction.
 */
export async function deleteLocalSession(sql: Sql, logicalId: string): Promise<DeleteResult> {
  const row = await sql.row('SELECT 1 FROM local_sessions WHERE logical_id = $1 FOR UPDATE', [logicalId]);
  if (row === null) return { kind: 'missing' };
  const running = await sql.row<{ admission_id: string }>(
    "SELECT admission_id FROM admissions WHERE logical_id = $1 AND state = 'running' LIMIT 1",
    [logicalId],
  );
  if (running) return { kind: 'running', admission_id: running.admission_id };
  const key = localSessionKey(logicalId);
  const transcripts = (
    await sql.rows<{ session_id: string }>('SELECT session_id FROM sessions WHERE session_key = $1', [key])
  ).map((r) => r.session_id);
  const inTranscripts = 'session_id IN (SELECT session_id FROM sessions WHERE session_key = $1)';
  // The index table may be missing (STO-4: dropped, being rebuilt): a statement on it would abort
  // the transaction, so it is looked for first. A rebuild reads only the messages left.
  const index = await sql.row<{ table: string | null }>(
    `SELECT to_regclass('messages_search')::text AS table`,
  );
  if (index?.table) {
    await sql.run(
      `DELETE FROM messages_search WHERE message_id IN (SELECT id FROM messages WHERE ${inTranscripts})`,
      [key],
    );
  }
  const messages = await sql.run(`DELETE FROM messages WHERE ${inTranscripts}`, [key]);
  await sql.run(`DELETE FROM rewinds WHERE ${inTranscripts}`, [key]);
  await sql.run('DELETE FROM turn_markers WHERE session_key = $1', [key]);
  await sql.run('DELETE FROM routes WHERE session_key = $1', [key]);
  await sql.run('UPDATE sessions SET parent_session_id = NULL WHERE session_key = $1', [key]);
  await sql.run('DELETE FROM sessions WHERE session_key = $1', [key]);
  await sql.run('DELETE FROM turn_costs WHERE session_key = $1', [key]);
  await sql.run('DELETE FROM compression_backoff WHERE subject = $1', [logicalId]);
  await sql.run('DELETE FROM budget_sessions WHERE session_key = $1', [key]);
  await sql.run('DELETE FROM session_shares WHERE logical_id = $1', [logicalId]);
  await sql.run('DELETE FROM session_events WHERE logical_id = $1', [logicalId]);
  await sql.run('DELETE FROM session_event_streams WHERE logical_id = $1', [logicalId]);
  await sql.run('DELETE FROM admissions WHERE logical_id = $1', [logicalId]);
  await sql.run('DELETE FROM private_receipts WHERE key = $1', [receiptKey(logicalId)]);
  await sql.run('DELETE FROM local_sessions WHERE logical_id = $1', [logicalId]);
  return { kind: 'deleted', transcripts: transcripts.length, messages };
}

export async function recentTurns(sql: Sql, logicalId: string, limit: number): Promise<TurnRecord[]> {
  const rows = await sql.rows<TurnRecordDbRow>(
    `${TURN_RECORD_SELECT} WHERE a.logical_id = $1 ORDER BY a.seq DESC LIMIT $2`,
    [logicalId, limit],
  );
  return rows.map(turnRecordFromRow);
}
