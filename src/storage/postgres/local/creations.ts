/** Local sessions and their private creation receipts on PostgreSQL (LOC-1, LOC-3, REC-1). */
import type { OwnerRef } from '../../../domain/local/receipt.js';
import type { ListLocalOptions, LocalSessionRow } from '../../../domain/ports/local-store.js';
import { localSessionFromRow, type LocalSessionDbRow } from '../../rows/local-sessions.js';
import type { Sql } from '../database.js';

const one = async (row: Promise<LocalSessionDbRow | null>) => {
  const found = await row;
  return found === null ? null : localSessionFromRow(found);
};

export async function insertLocalSession(
  sql: Sql,
  row: Omit<LocalSessionRow, 'generation' | 'paused_reason' | 'archived_at' | 'forked_from'>,
): Promise<void> {
  await sql.run(
    `INSERT INTO local_sessions
       (logical_id, profile, owner_subject, owner_provider, request_id, source, title, hidden, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      row.logical_id,
      row.profile,
      row.owner.subject,
      row.owner.provider,
      row.request_id,
      row.source,
      row.title,
      row.hidden ? 1 : 0,
      row.created_at,
    ],
  );
}

export function readLocalSession(sql: Sql, logicalId: string): Promise<LocalSessionRow | null> {
  return one(sql.row('SELECT * FROM local_sessions WHERE logical_id = $1', [logicalId]));
}

export function findByRequest(
  sql: Sql,
  owner: OwnerRef,
  profile: string,
  requestId: string,
): Promise<LocalSessionRow | null> {
  return one(
    sql.row(
      `SELECT * FROM local_sessions
       WHERE profile = $1 AND owner_provider = $2 AND owner_subject = $3 AND request_id = $4`,
      [profile, owner.provider, owner.subject, requestId],
    ),
  );
}

export function findByTitle(
  sql: Sql,
  owner: OwnerRef,
  profile: string,
  title: string,
): Promise<LocalSessionRow | null> {
  return one(
    sql.row(
      `SELECT * FROM local_sessions
       WHERE profile = $1 AND owner_provider = $2 AND owner_subject = $3 AND title = $4 AND hidden = 0
       ORDER BY created_at DESC LIMIT 1`,
      [profile, owner.provider, owner.subject, title],
    ),
  );
}

export async function listLocalSessions(sql: Sql, options: ListLocalOptions): Promise<LocalSessionRow[]> {
  // Byte order on both keys, as SQLite compares: the walk's order is the same on either store.
  const where = [
    ...(options.includeHidden ? [] : ['hidden = 0']),
    ...(options.before ? ['(created_at COLLATE "C", logical_id COLLATE "C") < ($2, $3)'] : []),
  ];
  const rows = await sql.rows<LocalSessionDbRow>(
    `SELECT * FROM local_sessions ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY created_at COLLATE "C" DESC, logical_id COLLATE "C" DESC LIMIT $1`,
    options.before ? [options.limit, options.before.created_at, options.before.logical_id] : [options.limit],
  );
  return rows.map(localSessionFromRow);
}

export async function allLogicalIds(sql: Sql): Promise<string[]> {
  return (await sql.rows<{ logical_id: string }>('SELECT logical_id FROM local_sessions')).map(
    (r) => r.logical_id,
  );
}

export async function setPaused(sql: Sql, logicalId: string, reason: string | null): Promise<void> {
  await sql.run('UPDATE local_sessions SET paused_reason = $1 WHERE logical_id = $2', [reason, logicalId]);
}

/** Bumps and returns the session's execution generation. */
export async function nextGeneration(sql: Sql, logicalId: string): Promise<number> {
  const row = await sql.row<{ generation: number }>(
    'UPDATE local_sessions SET generation = generation + 1 WHERE logical_id = $1 RETURNING generation',
    [logicalId],
  );
  if (row === null) throw new Error(`no local session ${logicalId}`);
  return row.generation;
}

export async function writeReceipt(sql: Sql, key: string, body: string): Promise<void> {
  await sql.run(
    'INSERT INTO private_receipts (key, body) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET body = excluded.body',
    [key, body],
  );
}

export async function readReceipt(sql: Sql, key: string): Promise<string | null> {
  const row = await sql.row<{ body: string }>('SELECT body FROM private_receipts WHERE key = $1', [key]);
  return row?.body ?? null;
}

/** Sets the title; with `onlyIfUntitled`, only a session that has none. True when a row changed. */
export async function writeTitle(
  sql: Sql,
  logicalId: string,
  title: string,
  onlyIfUntitled: boolean,
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE local_sessions SET title = $1 WHERE logical_id = $2${onlyIfUntitled ? ' AND title IS NULL' : ''}`,
    [title, logicalId],
  );
  return changed > 0;
}

/** Authority epochs (REC-3): opened by each daemon start, closed cleanly by a graceful stop. */
export async function openEpoch(sql: Sql, instanceId: string, at: string): Promise<number> {
  const row = await sql.row<{ epoch: number }>(
    'INSERT INTO authority_epochs (instance_id, started_at) VALUES ($1, $2) RETURNING epoch',
    [instanceId, at],
  );
  return row!.epoch;
}

export async function markCleanShutdown(sql: Sql, epoch: number, at: string): Promise<void> {
  await sql.run('UPDATE authority_epochs SET clean_shutdown_at = $1 WHERE epoch = $2', [at, epoch]);
}
