/** Storage operations on the routing map (STO-3). Each takes the database handle and holds its SQL. */
import type Database from 'better-sqlite3';
import type { SessionEntry } from '../../../domain/vocabulary.js';
import type { UsageUpdate } from '../../../domain/ports/session-store.js';
import { localSessionKey } from '../../../domain/local/receipt.js';
import { statement } from '../statements.js';
import { entryFromRow, rowFromEntry, ROUTE_COLUMNS, type RouteRow } from '../../rows/route-row.js';

type Db = Database.Database;

export function readRoute(db: Db, sessionKey: string): SessionEntry | null {
  const row = statement(db, 'SELECT * FROM routes WHERE session_key = ?').get(sessionKey) as
    RouteRow | undefined;
  return row === undefined ? null : entryFromRow(row);
}

/** Just the session id a key routes to (no row mapping): the hot path of every local turn. */
export function readRoutedSessionId(db: Db, sessionKey: string): string | null {
  const row = statement(db, 'SELECT session_id FROM routes WHERE session_key = ?').get(sessionKey) as
    { session_id: string } | undefined;
  return row?.session_id ?? null;
}

/** Marks activity on a route (a settled local turn): the session list sorts by updated_at. */
export function touchRoute(db: Db, sessionKey: string, at: string): void {
  statement(db, 'UPDATE routes SET updated_at = ? WHERE session_key = ? AND updated_at < ?').run(
    at,
    sessionKey,
    at,
  );
}

/**
 * Adds a turn's usage to a route's counters in place; false when the key has no route. Its cost status
 * becomes the least certain of the two (docs/cost.md); a route with no usage yet takes the turn's.
 */
export function addRouteUsage(db: Db, sessionKey: string, usage: UsageUpdate): boolean {
  const info = statement(
    db,
    `UPDATE routes SET input_tokens = input_tokens + @input_tokens,
       output_tokens = output_tokens + @output_tokens,
       cache_read_tokens = cache_read_tokens + @cache_read_tokens,
       cache_write_tokens = cache_write_tokens + @cache_write_tokens,
       total_tokens = total_tokens + @total_tokens,
       last_prompt_tokens = coalesce(@last_prompt_tokens, last_prompt_tokens),
       estimated_cost_usd = estimated_cost_usd + @cost_usd,
       cost_status = CASE
         WHEN @cost_status IS NULL THEN cost_status
         WHEN total_tokens = 0 AND estimated_cost_usd = 0 AND cost_status = 'unknown' THEN @cost_status
         WHEN cost_status = 'unknown' OR @cost_status = 'unknown' THEN 'unknown'
         WHEN cost_status = 'estimated' OR @cost_status = 'estimated' THEN 'estimated'
         ELSE 'reported' END
     WHERE session_key = @session_key`,
  ).run({
    session_key: sessionKey,
    input_tokens: usage.input_tokens ?? 0,
    output_tokens: usage.output_tokens ?? 0,
    cache_read_tokens: usage.cache_read_tokens ?? 0,
    cache_write_tokens: usage.cache_write_tokens ?? 0,
    total_tokens: usage.total_tokens ?? 0,
    last_prompt_tokens: usage.last_prompt_tokens ?? null,
    cost_usd: usage.cost_usd ?? 0,
    cost_status: usage.cost_status ?? null,
  });
  return info.changes === 1;
}

export function findRouteBySessionId(db: Db, sessionId: string): SessionEntry | null {
  const row = statement(db, 'SELECT * FROM routes WHERE session_id = ? ORDER BY updated_at DESC LIMIT 1').get(
    sessionId,
  ) as RouteRow | undefined;
  return row === undefined ? null : entryFromRow(row);
}

const WRITE_ROUTE = `INSERT OR REPLACE INTO routes (${ROUTE_COLUMNS.join(', ')})
  VALUES (${ROUTE_COLUMNS.map((c) => `@${c}`).join(', ')})`;

/** Writes the whole entry for its key (insert or replace). */
export function writeRoute(db: Db, entry: SessionEntry): void {
  statement(db, WRITE_ROUTE).run(rowFromEntry(entry));
}

export function deleteRoute(db: Db, sessionKey: string): void {
  statement(db, 'DELETE FROM routes WHERE session_key = ?').run(sessionKey);
}

export function countRoutes(db: Db): number {
  return (statement(db, 'SELECT count(*) AS n FROM routes').get() as { n: number }).n;
}

export interface RoutePageQuery {
  /** Exclusive upper bound (updated_at, session_key) from the previous page. */
  after: { updatedAt: string; sessionKey: string } | null;
  /** Only entries updated at or after this time. */
  since: string | null;
  limit: number;
}

/**
 * One page of routes by recency. Each filter is a plain range on routes_by_recency (no `? IS NULL OR`
 * tricks that would defeat the index), so the cost follows the page size, not the table size.
 */
export function listRoutePage(db: Db, query: RoutePageQuery): SessionEntry[] {
  const where: string[] = [];
  if (query.after !== null) where.push('(updated_at, session_key) < (@after_at, @after_key)');
  if (query.since !== null) where.push('updated_at >= @since');
  const sql = `SELECT * FROM routes ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
    ORDER BY updated_at DESC, session_key DESC LIMIT @limit`;
  const params: Record<string, string | number> = { limit: query.limit };
  if (query.after !== null) {
    params.after_at = query.after.updatedAt;
    params.after_key = query.after.sessionKey;
  }
  if (query.since !== null) params.since = query.since;
  const rows = statement(db, sql).all(params) as RouteRow[];
  return rows.map(entryFromRow);
}

/** Keys of routes last updated before `before`, excluding suspended ones, oldest first. */
/**
 * Routes not updated since `before`, except suspended ones and those a local session owns (the
 * route key `localSessionKey(logical_id)` of a row in local_sessions: part of its identity).
 */
export function listPrunableRoutes(db: Db, before: string): string[] {
  const prefix = localSessionKey('');
  const rows = statement(
    db,
    `SELECT session_key FROM routes
      WHERE updated_at < ? AND suspended = 0
        AND NOT (substr(session_key, 1, ?) = ?
                 AND substr(session_key, ?) IN (SELECT logical_id FROM local_sessions))
      ORDER BY updated_at`,
  ).all(before, prefix.length, prefix, prefix.length + 1) as { session_key: string }[];
  return rows.map((r) => r.session_key);
}
