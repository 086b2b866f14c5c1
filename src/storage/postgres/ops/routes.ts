/** Storage operations on the routing map (STO-3) on PostgreSQL; rows map as on SQLite (rows/route-row.ts). */
import { localSessionKey } from '../../../domain/local/receipt.js';
import type { SessionEntry } from '../../../domain/vocabulary.js';
import type { UsageUpdate } from '../../../domain/ports/session-store.js';
import { entryFromRow, rowFromEntry, ROUTE_COLUMNS, type RouteRow } from '../../rows/route-row.js';
import type { Sql } from '../database.js';

export async function readRoute(sql: Sql, sessionKey: string): Promise<SessionEntry | null> {
  const row = await sql.row<RouteRow>('SELECT * FROM routes WHERE session_key = $1', [sessionKey]);
  return row === null ? null : entryFromRow(row);
}

export async function readRoutedSessionId(sql: Sql, sessionKey: string): Promise<string | null> {
  const row = await sql.row<{ session_id: string }>('SELECT session_id FROM routes WHERE session_key = $1', [
    sessionKey,
  ]);
  return row?.session_id ?? null;
}

export async function touchRoute(sql: Sql, sessionKey: string, at: string): Promise<void> {
  await sql.run('UPDATE routes SET updated_at = $1 WHERE session_key = $2 AND updated_at < $1', [
    at,
    sessionKey,
  ]);
}

/** As SQLite's addRouteUsage: the counters added, the cost status the least certain of the two. */
export async function addRouteUsage(sql: Sql, sessionKey: string, usage: UsageUpdate): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE routes SET input_tokens = input_tokens + $2,
       output_tokens = output_tokens + $3,
       cache_read_tokens = cache_read_tokens + $4,
       cache_write_tokens = cache_write_tokens + $5,
       total_tokens = total_tokens + $6,
       last_prompt_tokens = coalesce($7, last_prompt_tokens),
       estimated_cost_usd = estimated_cost_usd + $8,
       cost_status = CASE
         WHEN $9::text IS NULL THEN cost_status
         WHEN total_tokens = 0 AND estimated_cost_usd = 0 AND cost_status = 'unknown' THEN $9::text
         WHEN cost_status = 'unknown' OR $9::text = 'unknown' THEN 'unknown'
         WHEN cost_status = 'estimated' OR $9::text = 'estimated' THEN 'estimated'
         ELSE 'reported' END
     WHERE session_key = $1`,
    [
      sessionKey,
      usage.input_tokens ?? 0,
      usage.output_tokens ?? 0,
      usage.cache_read_tokens ?? 0,
      usage.cache_write_tokens ?? 0,
      usage.total_tokens ?? 0,
      usage.last_prompt_tokens ?? null,
      usage.cost_usd ?? 0,
      usage.cost_status ?? null,
    ],
  );
  return changed === 1;
}

export async function findRouteBySessionId(sql: Sql, sessionId: string): Promise<SessionEntry | null> {
  const row = await sql.row<RouteRow>(
    'SELECT * FROM routes WHERE session_id = $1 ORDER BY updated_at DESC LIMIT 1',
    [sessionId],
  );
  return row === null ? null : entryFromRow(row);
}

const WRITE_ROUTE = `INSERT INTO routes (${ROUTE_COLUMNS.join(', ')})
  VALUES (${ROUTE_COLUMNS.map((_, i) => `$${i + 1}`).join(', ')})
  ON CONFLICT (session_key) DO UPDATE SET
  ${ROUTE_COLUMNS.filter((c) => c !== 'session_key')
    .map((c) => `${c} = EXCLUDED.${c}`)
    .join(', ')}`;

/** Writes the whole entry for its key (insert or replace). */
export async function writeRoute(sql: Sql, entry: SessionEntry): Promise<void> {
  const row = rowFromEntry(entry);
  await sql.run(
    WRITE_ROUTE,
    ROUTE_COLUMNS.map((c) => row[c]),
  );
}

export async function deleteRoute(sql: Sql, sessionKey: string): Promise<void> {
  await sql.run('DELETE FROM routes WHERE session_key = $1', [sessionKey]);
}

export async function countRoutes(sql: Sql): Promise<number> {
  return (await sql.row<{ n: number }>('SELECT count(*) AS n FROM routes'))!.n;
}

export interface RoutePageQuery {
  after: { updatedAt: string; sessionKey: string } | null;
  since: string | null;
  limit: number;
}

/** One page of routes by recency, each filter a plain range on routes_by_recency. */
export async function listRoutePage(sql: Sql, query: RoutePageQuery): Promise<SessionEntry[]> {
  const where: string[] = [];
  const params: unknown[] = [];
  if (query.after !== null) {
    params.push(query.after.updatedAt, query.after.sessionKey);
    where.push(`(updated_at, session_key) < ($${params.length - 1}, $${params.length})`);
  }
  if (query.since !== null) {
    params.push(query.since);
    where.push(`updated_at >= $${params.length}`);
  }
  params.push(query.limit);
  const rows = await sql.rows<RouteRow>(
    `SELECT * FROM routes ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
      ORDER BY updated_at DESC, session_key DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(entryFromRow);
}

/** Routes idle since `before`, not suspended, and not a local session's (its logical row owns it). */
export async function listPrunableRoutes(sql: Sql, before: string): Promise<string[]> {
  const prefix = localSessionKey('');
  const rows = await sql.rows<{ session_key: string }>(
    `SELECT session_key FROM routes
      WHERE updated_at < $1 AND suspended = 0
        AND NOT (left(session_key, $2) = $3
                 AND substr(session_key, $2 + 1) IN (SELECT logical_id FROM local_sessions))
      ORDER BY updated_at`,
    [before, prefix.length, prefix],
  );
  return rows.map((r) => r.session_key);
}
