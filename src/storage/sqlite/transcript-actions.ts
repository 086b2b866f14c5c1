/**
 * The transcript actions of the SQLite store (STO-2, STO-4). Messages are canonical; the full-text
 * index is updated beside them on a best-effort basis and rebuilt when stale.
 */
import { GatehouseError, InvalidParamsError } from '../../domain/errors.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type {
  RewindResult,
  SearchHit,
  SearchIndexStatus,
  SearchOptions,
  StoredMessage,
} from '../session-store.js';
import { requireSession, tx } from './actions-common.js';
import type { SqliteDatabase } from './database.js';
import * as messages from './ops/messages.js';
import * as search from './ops/search-index.js';

const MESSAGE_ROLES = new Set(['system', 'user', 'assistant', 'tool']);

export function appendToTranscript(
  db: SqliteDatabase,
  sessionId: string,
  input: TranscriptMessage | readonly TranscriptMessage[],
  options: { skipDb?: boolean; now?: Date } = {},
): StoredMessage[] {
  const list = validateMessages(Array.isArray(input) ? input : [input as TranscriptMessage]);
  if (options.skipDb === true || list.length === 0) return [];
  const at = (options.now ?? new Date()).toISOString();
  return withIndexFallback(db, (index) => {
    requireSession(db, sessionId);
    const stored = messages.insertMessages(db, sessionId, list, at);
    index(stored);
    return stored;
  });
}

type Indexer = (rows: readonly StoredMessage[]) => void;

/**
 * Runs a message write with the index updated beside it. An index failure normally stays inside its
 * savepoint (ops/search-index.ts), but some SQLite errors abort the whole transaction; then the
 * write is repeated with the index only marked stale, so messages always land (STO-4).
 */
function withIndexFallback<T>(db: SqliteDatabase, write: (index: Indexer) => T): T {
  try {
    return tx(db, () => write((rows) => search.indexMessages(db, rows)));
  } catch (error) {
    if (error instanceof GatehouseError || isBusy(error)) throw error;
    return tx(db, () => write(() => search.markIndexStale(db)));
  }
}

function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

export function rewriteTranscript(
  db: SqliteDatabase,
  sessionId: string,
  input: readonly TranscriptMessage[],
  options: { now?: Date } = {},
): StoredMessage[] {
  const list = validateMessages(input);
  const at = (options.now ?? new Date()).toISOString();
  return withIndexFallback(db, (index) => {
    requireSession(db, sessionId);
    messages.removeVisibleMessages(db, sessionId, 'rewrite', at);
    const stored = messages.insertMessages(db, sessionId, list, at);
    index(stored);
    return stored;
  });
}

export function loadTranscript(db: SqliteDatabase, sessionId: string): StoredMessage[] {
  return messages.loadVisibleMessages(db, sessionId);
}

export function rewindSession(
  db: SqliteDatabase,
  sessionId: string,
  n = 1,
  options: { now?: Date } = {},
): RewindResult {
  if (!Number.isInteger(n) || n < 1) throw new InvalidParamsError(`n must be a positive integer, got ${n}`);
  const at = (options.now ?? new Date()).toISOString();
  return tx(db, () => {
    requireSession(db, sessionId);
    const users = messages.lastUserMessages(db, sessionId, n);
    const target = users[users.length - 1];
    if (target === undefined) return { rewound_count: 0, turns_undone: 0, target_text: null };
    const rewindId = messages.insertRewindAudit(db, {
      sessionId,
      at,
      turnsRequested: n,
      turnsUndone: users.length,
      firstMessageId: target.id,
      targetText: target.content,
    });
    const count = messages.rewindFrom(db, sessionId, target.id, rewindId, at);
    return { rewound_count: count, turns_undone: users.length, target_text: target.content };
  });
}

export function searchMessages(db: SqliteDatabase, query: string, options: SearchOptions = {}): SearchHit[] {
  if (query.trim() === '') throw new InvalidParamsError('search query is empty');
  const limit = options.limit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
    throw new InvalidParamsError(`limit must be an integer from 1 to 500, got ${String(limit)}`);
  }
  if (search.isIndexStale(db)) rebuildSearchIndex(db);
  return search.searchIndex(db, query, { sessionId: options.sessionId ?? null, limit });
}

export function rebuildSearchIndex(db: SqliteDatabase): void {
  tx(db, () => search.rebuildIndex(db));
}

export function searchIndexStatus(db: SqliteDatabase): SearchIndexStatus {
  return { stale: search.isIndexStale(db) };
}

function validateMessages(list: readonly TranscriptMessage[]): readonly TranscriptMessage[] {
  for (const m of list) {
    if (!MESSAGE_ROLES.has(m.role))
      throw new InvalidParamsError(`unknown message role ${JSON.stringify(m.role)}`);
    if (m.content !== null && typeof m.content !== 'string') {
      throw new InvalidParamsError('message content must be a string or null');
    }
  }
  return list;
}
