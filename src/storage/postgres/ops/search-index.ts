/**
 * The full-text index on PostgreSQL (STO-4): `messages_search` holds a tsvector per message, under a
 * GIN index. It is derived from `messages` and may be missing or stale without losing anything: a
 * failed index write marks it stale, and a rebuild empties it and fills it from the canonical rows.
 * As on SQLite it catches up — every message above `indexed_through`, in one statement — shortly
 * after writes and always before a search.
 */
import type { SearchHit } from '../../../domain/ports/session-store.js';
import type { TranscriptMessage } from '../../../domain/vocabulary.js';
import type { Sql } from '../database.js';
import { DOCUMENT_SQL, snippet, type TsQuery } from '../search-query.js';

export async function markIndexStale(sql: Sql): Promise<void> {
  await sql.run(
    `INSERT INTO search_index_state (id, stale) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET stale = 1`,
  );
}

/** Indexes the messages written since the last catch-up; null when the index is stale. */
export async function catchUpIndex(sql: Sql): Promise<number | null> {
  const state = await sql.row<{ stale: number; indexed_through: number }>(
    'SELECT stale, indexed_through FROM search_index_state WHERE id = 1',
  );
  if (state === null || state.stale === 1) return null;
  const last = (await sql.row<{ n: number }>('SELECT coalesce(max(id), 0)::bigint AS n FROM messages'))!.n;
  if (last <= state.indexed_through) return 0;
  const added = await sql.run(
    `INSERT INTO messages_search (message_id, document)
     SELECT id, ${DOCUMENT_SQL} FROM messages WHERE id > $1 AND id <= $2 AND content IS NOT NULL
     ON CONFLICT (message_id) DO NOTHING`,
    [state.indexed_through, last],
  );
  await sql.run('UPDATE search_index_state SET indexed_through = $1 WHERE id = 1', [last]);
  return added;
}

/** Drops whatever is there (even a damaged index) and rebuilds it from the canonical messages. */
export async function rebuildIndex(sql: Sql): Promise<void> {
  await sql.run('DROP TABLE IF EXISTS messages_search');
  await sql.run('CREATE TABLE messages_search (message_id BIGINT PRIMARY KEY, document TSVECTOR NOT NULL)');
  await sql.run(
    `INSERT INTO messages_search (message_id, document)
     SELECT id, ${DOCUMENT_SQL} FROM messages WHERE content IS NOT NULL`,
  );
  await sql.run('CREATE INDEX messages_search_document ON messages_search USING GIN (document)');
  await sql.run(
    `INSERT INTO search_index_state (id, stale, indexed_through)
       VALUES (1, 0, (SELECT coalesce(max(id), 0) FROM messages))
     ON CONFLICT (id) DO UPDATE SET stale = 0, indexed_through = EXCLUDED.indexed_through`,
  );
}

/** Newest visible matches first. */
export async function searchIndex(
  sql: Sql,
  query: TsQuery,
  options: { sessionId: string | null; limit: number },
): Promise<SearchHit[]> {
  const params: unknown[] = [query.text, options.limit];
  if (options.sessionId !== null) params.push(options.sessionId);
  const rows = await sql.rows<{
    message_id: number;
    session_id: string;
    role: TranscriptMessage['role'];
    content: string;
    timestamp: string;
  }>(
    `SELECT m.id AS message_id, m.session_id, m.role, m.content, m.created_at AS timestamp
       FROM messages_search s JOIN messages m ON m.id = s.message_id
      WHERE s.document @@ to_tsquery('simple', $1) AND m.removed_at IS NULL
        ${options.sessionId === null ? '' : 'AND m.session_id = $3'}
      ORDER BY s.message_id DESC LIMIT $2`,
    params,
  );
  return rows.map(({ content, ...hit }) => ({ ...hit, snippet: snippet(content, query.terms) }));
}

/** What `gatehouse doctor` sees of the index: whether it is there, stale, and how much it holds. */
export interface IndexInspection {
  /** The index table and its GIN index both exist. */
  readonly present: boolean;
  readonly stale: boolean;
  /** Rows in the index, against the messages with content up to its watermark. */
  readonly indexed: number;
  readonly expected: number;
}

export async function inspectIndex(sql: Sql): Promise<IndexInspection> {
  const found = await sql.row<{ table: string | null; gin: string | null }>(
    `SELECT to_regclass('messages_search')::text AS table, to_regclass('messages_search_document')::text AS gin`,
  );
  const state = await sql.row<{ stale: number; indexed_through: number }>(
    'SELECT stale, indexed_through FROM search_index_state WHERE id = 1',
  );
  const stale = state === null || state.stale === 1;
  if (!found?.table || !found.gin) return { present: false, stale, indexed: 0, expected: 0 };
  const through = state?.indexed_through ?? 0;
  const counts = await sql.row<{ indexed: number; expected: number }>(
    `SELECT (SELECT count(*) FROM messages_search s JOIN messages m ON m.id = s.message_id
              WHERE m.id <= $1)::bigint AS indexed,
            (SELECT count(*) FROM messages WHERE id <= $1 AND content IS NOT NULL)::bigint AS expected`,
    [through],
  );
  return { present: true, stale, indexed: counts?.indexed ?? 0, expected: counts?.expected ?? 0 };
}
