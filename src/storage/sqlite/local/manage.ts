/** Archiving, forks and deletion of local sessions (issue 31), on SQLite. */
import { localSessionKey, receiptKey } from '../../../domain/local/receipt.js';
import type { DeleteResult, LocalSessionRow, TurnRecord } from '../../../domain/ports/local-store.js';
import { TURN_RECORD_SELECT, turnRecordFromRow, type TurnRecordDbRow } from '../../rows/admissions.js';
import { localSessionFromRow, type LocalSessionDbRow } from '../../rows/local-sessions.js';
import type { SqliteDatabase } from '../database.js';
import { markIndexStale } from '../ops/search-index.js';
import { savepoint, statement } from '../statements.js';

export function setArchived(db: SqliteDatabase, logicalId: string, archivedAt: string | null): boolean {
  return (
    statement(db, 'UPDATE local_sessions SET archived_at = ? WHERE logical_id = ?').run(archivedAt, logicalId)
      .changes > 0
  );
}

export function setForkedFrom(db: SqliteDatabase, logicalId: string, from: string, messageId: number): void {
  statement(db, 'UPDATE local_sessions SET forked_from = ?, forked_message_id = ? WHERE logical_id = ?').run(
    from,
    messageId,
    logicalId,
  );
}

export function forksOf(db: SqliteDatabase, logicalId: string): LocalSessionRow[] {
  const rows = statement(
    db,
    'SELECT * FROM local_sessions WHERE forked_from = ? ORDER BY created_at, logical_id',
  ).all(logicalId) as LocalSessionDbRow[];
  return rows.map(localSessionFromRow);
}

/**
 * Removes a session and everything stored for it (its transcripts, index rows, receipt, admissions,
 * costs, budget pause, shares). Kept on purpose: the audit trail (append-only) and the budget spend
 * records (a principal's daily limit still counts what a deleted session spent), which hold its id
 * but no text; test/e2e/session-manage.test.ts scans every table for anything else. Runs inside the
 * caller's transaction.
 */
export function deleteLocalSession(db: SqliteDatabase, logicalId: string): DeleteResult {
  if (statement(db, 'SELECT 1 FROM local_sessions WHERE logical_id = ?').get(logicalId) === undefined)
    return { kind: 'missing' };
  const running = statement(
    db,
    "SELECT admission_id FROM admissions WHERE logical_id = ? AND state = 'running' LIMIT 1",
  ).get(logicalId) as { admission_id: string } | undefined;
  if (running) return { kind: 'running', admission_id: running.admission_id };
  const key = localSessionKey(logicalId);
  const transcripts = (
    statement(db, 'SELECT session_id FROM sessions WHERE session_key = ?').all(key) as {
      session_id: string;
    }[]
  ).map((r) => r.session_id);
  const inTranscripts = `session_id IN (SELECT session_id FROM sessions WHERE session_key = @key)`;
  dropIndexRows(db, inTranscripts, key);
  const messages = statement(db, `DELETE FROM messages WHERE ${inTranscripts}`).run({ key }).changes;
  statement(db, `DELETE FROM rewinds WHERE ${inTranscripts}`).run({ key });
  statement(db, 'DELETE FROM turn_markers WHERE session_key = ?').run(key);
  statement(db, 'DELETE FROM routes WHERE session_key = ?').run(key);
  statement(db, 'UPDATE sessions SET parent_session_id = NULL WHERE session_key = ?').run(key);
  statement(db, 'DELETE FROM sessions WHERE session_key = ?').run(key);
  statement(db, 'DELETE FROM turn_costs WHERE session_key = ?').run(key);
  statement(db, 'DELETE FROM compression_backoff WHERE subject = ?').run(logicalId);
  statement(db, 'DELETE FROM budget_sessions WHERE session_key = ?').run(key);
  statement(db, 'DELETE FROM session_shares WHERE logical_id = ?').run(logicalId);
  statement(db, 'DELETE FROM admissions WHERE logical_id = ?').run(logicalId);
  statement(db, 'DELETE FROM private_receipts WHERE key = ?').run(receiptKey(logicalId));
  statement(db, 'DELETE FROM local_sessions WHERE logical_id = ?').run(logicalId);
  return { kind: 'deleted', transcripts: transcripts.length, messages };
}

/**
 * The full-text index is an external-content FTS5 table: its rows for messages already indexed are
 * removed with FTS5's 'delete' command (given the content they were indexed with). A failure marks
 * the index stale (the next search rebuilds it from what is left), as every index write does.
 */
function dropIndexRows(db: SqliteDatabase, inTranscripts: string, key: string): void {
  const state = statement(db, 'SELECT stale, indexed_through FROM search_index_state WHERE id = 1').get() as
    { stale: number; indexed_through: number } | undefined;
  if (state === undefined || state.stale === 1) return;
  try {
    savepoint(db, () =>
      statement(
        db,
        `INSERT INTO messages_fts (messages_fts, rowid, content)
         SELECT 'delete', id, content FROM messages
          WHERE ${inTranscripts} AND id <= @through AND content IS NOT NULL`,
      ).run({ key, through: state.indexed_through }),
    );
  } catch {
    markIndexStale(db);
  }
}

export function recentTurns(db: SqliteDatabase, logicalId: string, limit: number): TurnRecord[] {
  const rows = statement(db, `${TURN_RECORD_SELECT} WHERE a.logical_id = ? ORDER BY a.seq DESC LIMIT ?`).all(
    logicalId,
    limit,
  ) as TurnRecordDbRow[];
  return rows.map(turnRecordFromRow);
}
