/** Local sessions and their private creation receipts (LOC-1, LOC-3, REC-1). */
import type { OwnerRef } from '../../../domain/local/receipt.js';
import type { ListLocalOptions, LocalSessionRow } from '../../../domain/ports/local-store.js';
import type { SqliteDatabase } from '../database.js';
import { localSessionFromRow, type LocalSessionDbRow } from '../../rows/local-sessions.js';
import { statement } from '../statements.js';

export function insertLocalSession(
  db: SqliteDatabase,
  row: Omit<LocalSessionRow, 'generation' | 'paused_reason' | 'archived_at' | 'forked_from'>,
): void {
  statement(
    db,
    `INSERT INTO local_sessions
       (logical_id, profile, owner_subject, owner_provider, request_id, source, title, hidden, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    row.logical_id,
    row.profile,
    row.owner.subject,
    row.owner.provider,
    row.request_id,
    row.source,
    row.title,
    row.hidden ? 1 : 0,
    row.created_at,
  );
}

export function readLocalSession(db: SqliteDatabase, logicalId: string): LocalSessionRow | null {
  const row = statement(db, 'SELECT * FROM local_sessions WHERE logical_id = ?').get(logicalId) as
    LocalSessionDbRow | undefined;
  return row ? localSessionFromRow(row) : null;
}

export function findByRequest(
  db: SqliteDatabase,
  owner: OwnerRef,
  profile: string,
  requestId: string,
): LocalSessionRow | null {
  const row = statement(
    db,
    `SELECT * FROM local_sessions
     WHERE profile = ? AND owner_provider = ? AND owner_subject = ? AND request_id = ?`,
  ).get(profile, owner.provider, owner.subject, requestId) as LocalSessionDbRow | undefined;
  return row ? localSessionFromRow(row) : null;
}

export function findByTitle(
  db: SqliteDatabase,
  owner: OwnerRef,
  profile: string,
  title: string,
): LocalSessionRow | null {
  const row = statement(
    db,
    `SELECT * FROM local_sessions
     WHERE profile = ? AND owner_provider = ? AND owner_subject = ? AND title = ? AND hidden = 0
     ORDER BY created_at DESC LIMIT 1`,
  ).get(profile, owner.provider, owner.subject, title) as LocalSessionDbRow | undefined;
  return row ? localSessionFromRow(row) : null;
}

export function listLocalSessions(db: SqliteDatabase, options: ListLocalOptions): LocalSessionRow[] {
  const where = [
    ...(options.includeHidden ? [] : ['hidden = 0']),
    ...(options.before ? ['(created_at, logical_id) < (@created_at, @logical_id)'] : []),
  ];
  const sql = `SELECT * FROM local_sessions ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY created_at DESC, logical_id DESC LIMIT @limit`;
  const params = { limit: options.limit, ...(options.before ?? {}) };
  return (statement(db, sql).all(params) as LocalSessionDbRow[]).map(localSessionFromRow);
}

export function allLogicalIds(db: SqliteDatabase): string[] {
  return (statement(db, 'SELECT logical_id FROM local_sessions').all() as { logical_id: string }[]).map(
    (r) => r.logical_id,
  );
}

export function setPaused(db: SqliteDatabase, logicalId: string, reason: string | null): void {
  statement(db, 'UPDATE local_sessions SET paused_reason = ? WHERE logical_id = ?').run(reason, logicalId);
}

/** Bumps and returns the session's execution generation. */
export function nextGeneration(db: SqliteDatabase, logicalId: string): number {
  const row = statement(
    db,
    'UPDATE local_sessions SET generation = generation + 1 WHERE logical_id = ? RETURNING generation',
  ).get(logicalId) as { generation: number };
  return row.generation;
}

export function writeReceipt(db: SqliteDatabase, key: string, body: string): void {
  statement(db, 'INSERT OR REPLACE INTO private_receipts (key, body) VALUES (?, ?)').run(key, body);
}

export function readReceipt(db: SqliteDatabase, key: string): string | null {
  const row = statement(db, 'SELECT body FROM private_receipts WHERE key = ?').get(key) as
    { body: string } | undefined;
  return row?.body ?? null;
}
