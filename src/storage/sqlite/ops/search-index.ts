/**
 * The full-text index (STO-4). It is derived from `messages` and may be missing, stale or corrupt
 * without losing anything: a failed index write marks the index stale, and a rebuild drops it and
 * recreates it from the canonical rows.
 *
 * Messages are not indexed in the transaction that writes them: that cost a turn two index segments
 * on its critical path (the question with the claim, the answer with the settlement). The index
 * instead catches up — every message above `indexed_through`, in one statement — shortly after
 * writes, and always before a search, so a search never misses a stored message.
 */
import { Database, type SqliteDatabase } from '../driver.js';
import { InvalidParamsError } from '../../../domain/errors.js';
import type { SearchHit } from '../../../domain/ports/session-store.js';
import { savepoint, statement } from '../statements.js';

type Db = SqliteDatabase;
const { SqliteError } = Database;

interface IndexState {
  stale: number;
  indexed_through: number;
}

function indexState(db: Db): IndexState | undefined {
  return statement(db, 'SELECT stale, indexed_through FROM search_index_state WHERE id = 1').get() as
    IndexState | undefined;
}

export function markIndexStale(db: Db): void {
  statement(
    db,
    `INSERT INTO search_index_state (id, stale) VALUES (1, 1)
     ON CONFLICT (id) DO UPDATE SET stale = 1`,
  ).run();
}

/**
 * Indexes every message written since the last catch-up, inside a savepoint of the caller's
 * transaction. Returns how many messages it indexed, or null when the index is stale (the next
 * rebuild picks them up) or the write failed (then it marks the index stale; nothing else is undone).
 */
export function catchUpIndex(db: Db): number | null {
  const state = indexState(db);
  if (state === undefined || state.stale === 1) return null;
  try {
    return savepoint(db, () => {
      const last = statement(db, 'SELECT coalesce(max(id), 0) FROM messages').pluck().get() as number;
      if (last <= state.indexed_through) return 0;
      const added = statement(
        db,
        `INSERT INTO messages_fts (rowid, content)
         SELECT id, content FROM messages WHERE id > ? AND id <= ? AND content IS NOT NULL`,
      ).run(state.indexed_through, last).changes;
      statement(db, 'UPDATE search_index_state SET indexed_through = ? WHERE id = 1').run(last);
      return added;
    });
  } catch {
    markIndexStale(db);
    return null;
  }
}

/** Drops whatever is there (even a corrupt index) and rebuilds it from the canonical messages. */
export function rebuildIndex(db: Db): void {
  db.exec(`
    DROP TABLE IF EXISTS messages_fts;
    CREATE VIRTUAL TABLE messages_fts USING fts5 (content, content = 'messages', content_rowid = 'id');
    INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
    INSERT OR REPLACE INTO search_index_state (id, stale, indexed_through)
      VALUES (1, 0, (SELECT coalesce(max(id), 0) FROM messages));
  `);
}

/**
 * Plain text as an FTS5 query: every whitespace-separated term becomes an FTS5 string (quotes
 * doubled), so `rm -rf`, `what colour?`, `/tmp/x` and `README.md` mean the words in them, and the
 * terms are ANDed. A term with no letter or digit (`*`, `--`) holds no token and is dropped; null
 * when nothing is left to look for.
 */
export function plainTextQuery(text: string): string | null {
  const terms = text
    .split(/\s+/)
    .filter((term) => /[\p{L}\p{N}\p{Co}]/u.test(term))
    .map((term) => `"${term.replace(/"/g, '""')}"`);
  return terms.length === 0 ? null : terms.join(' ');
}

/**
 * Newest visible matches first. FTS5 walks rowids in descending order and stops at the limit.
 * `syntax: 'plain'` reads the query as words (plainTextQuery); `'fts'` passes FTS5 query syntax
 * through, and a query SQLite refuses is the caller's mistake: invalid_params with SQLite's reason.
 */
export function searchIndex(
  db: Db,
  query: string,
  options: { sessionId: string | null; limit: number; syntax: 'plain' | 'fts' },
): SearchHit[] {
  const match = options.syntax === 'fts' ? query : plainTextQuery(query);
  if (match === null) return [];
  const sql = `SELECT m.id AS message_id, m.session_id, m.role,
                      snippet(messages_fts, 0, '[', ']', '…', 16) AS snippet, m.created_at AS timestamp
                 FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid
                WHERE messages_fts MATCH @query AND m.removed_at IS NULL
                  ${options.sessionId === null ? '' : 'AND m.session_id = @session_id'}
                ORDER BY messages_fts.rowid DESC LIMIT @limit`;
  const params: Record<string, string | number> = { query: match, limit: options.limit };
  if (options.sessionId !== null) params.session_id = options.sessionId;
  // Prepared outside the try: the statement itself is ours, so a failure to prepare is not the query's.
  const prepared = statement(db, sql);
  try {
    return prepared.all(params) as SearchHit[];
  } catch (error) {
    // The statement is fixed and valid, so a plain SQLITE_ERROR while running it comes from the
    // MATCH text (FTS5 reports its syntax errors so). Corruption, I/O and locking have codes of their own.
    if (options.syntax === 'fts' && error instanceof SqliteError && error.code === 'SQLITE_ERROR') {
      throw new InvalidParamsError(
        `search query ${JSON.stringify(query)} is not valid FTS5 syntax (${error.message}); leave out syntax: "fts" to search for plain words`,
      );
    }
    throw error;
  }
}
