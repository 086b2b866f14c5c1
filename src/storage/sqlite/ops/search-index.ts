/**
 * The full-text index (STO-4). It is derived from `messages` and may be missing, stale or corrupt
 * without losing anything: index writes run in a savepoint that may fail on its own, a failure marks
 * the index stale, and a rebuild drops it and recreates it from the canonical rows.
 */
import type Database from 'better-sqlite3';
import { InvalidParamsError } from '../../../domain/errors.js';
import type { SearchHit } from '../../session-store.js';
import { savepoint, statement } from '../statements.js';

type Db = Database.Database;

export function isIndexStale(db: Db): boolean {
  const row = statement(db, 'SELECT stale FROM search_index_state WHERE id = 1').get() as
    { stale: number } | undefined;
  return row === undefined || row.stale === 1;
}

export function markIndexStale(db: Db): void {
  statement(db, 'INSERT OR REPLACE INTO search_index_state (id, stale) VALUES (1, 1)').run();
}

/**
 * Adds messages to the index inside a savepoint of the caller's transaction. Returns false (and
 * marks the index stale) when that fails; the caller's own writes are untouched. Skipped while the
 * index is already stale: the next rebuild picks these rows up anyway.
 */
export function indexMessages(db: Db, rows: readonly { id: number; content: string | null }[]): boolean {
  if (isIndexStale(db)) return false;
  try {
    savepoint(db, () => {
      const insert = statement(db, 'INSERT INTO messages_fts (rowid, content) VALUES (?, ?)');
      for (const row of rows) if (row.content !== null) insert.run(row.id, row.content);
    });
    return true;
  } catch {
    markIndexStale(db);
    return false;
  }
}

/** Drops whatever is there (even a corrupt index) and rebuilds it from the canonical messages. */
export function rebuildIndex(db: Db): void {
  db.exec(`
    DROP TABLE IF EXISTS messages_fts;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (content, content = 'messages', content_rowid = 'id');
    INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
    INSERT OR REPLACE INTO search_index_state (id, stale) VALUES (1, 0);
  `);
}

/** Newest visible matches first. FTS5 walks rowids in descending order and stops at the limit. */
export function searchIndex(
  db: Db,
  query: string,
  options: { sessionId: string | null; limit: number },
): SearchHit[] {
  const sql = `SELECT m.id AS message_id, m.session_id, m.role,
                      snippet(messages_fts, 0, '[', ']', '…', 16) AS snippet, m.created_at AS timestamp
                 FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
                WHERE messages_fts MATCH @query AND m.removed_at IS NULL
                  ${options.sessionId === null ? '' : 'AND m.session_id = @session_id'}
                ORDER BY messages_fts.rowid DESC LIMIT @limit`;
  const params: Record<string, string | number> = { query, limit: options.limit };
  if (options.sessionId !== null) params.session_id = options.sessionId;
  try {
    return statement(db, sql).all(params) as SearchHit[];
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (/fts5: syntax error|unterminated string|no such column/i.test(message)) {
      throw new InvalidParamsError(
        `search query ${JSON.stringify(query)} is not valid FTS5 syntax: ${message}`,
      );
    }
    throw error;
  }
}
