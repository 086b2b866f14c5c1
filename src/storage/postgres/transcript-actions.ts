/**
 * The transcript actions of the PostgreSQL store (STO-2, STO-4), one per contract operation.
 * Messages are canonical; the full-text index catches up with them shortly after each write and
 * before every search (ops/search-index.ts), and is rebuilt when stale.
 */
import { GatehouseError, InvalidParamsError, NotFoundError } from '../../domain/errors.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type {
  RewindResult,
  SearchHit,
  SearchIndexStatus,
  SearchOptions,
  StoredMessage,
  TranscriptPage,
  TranscriptPageOptions,
  TranscriptTail,
} from '../../domain/ports/session-store.js';
import { checkLimit, validateMessages, SEARCH_LIMIT_MAX } from '../../domain/ports/store-rules.js';

export { validateMessages };
import { requireSession } from './actions-common.js';

export { requireSession as requireSessionOf };
import type { PgDatabase, Sql } from './database.js';
import * as messages from './ops/messages.js';
import * as search from './ops/search-index.js';
import { ftsTsQuery, plainTsQuery } from './search-query.js';

/** Appends inside the caller's transaction, and schedules the index catch-up. */
export async function appendInTransaction(
  db: PgDatabase,
  sql: Sql,
  sessionId: string,
  input: TranscriptMessage | readonly TranscriptMessage[],
  now: Date,
): Promise<StoredMessage[]> {
  const list = validateMessages(input);
  if (list.length === 0) return [];
  const stored = await messages.insertMessages(sql, sessionId, list, now.toISOString());
  scheduleIndexCatchUp(db);
  return stored;
}

export async function appendToTranscript(
  db: PgDatabase,
  sql: Sql,
  sessionId: string,
  list: readonly TranscriptMessage[],
  now: Date,
): Promise<StoredMessage[]> {
  await requireSession(sql, sessionId);
  return appendInTransaction(db, sql, sessionId, list, now);
}

export async function rewriteTranscript(
  db: PgDatabase,
  sql: Sql,
  sessionId: string,
  list: readonly TranscriptMessage[],
  now: Date,
): Promise<StoredMessage[]> {
  await requireSession(sql, sessionId);
  await messages.removeVisibleMessages(sql, sessionId, 'rewrite', now.toISOString());
  return appendInTransaction(db, sql, sessionId, list, now);
}

export async function loadTranscriptTail(
  sql: Sql,
  sessionId: string,
  afterId: number,
): Promise<TranscriptTail> {
  const edits = await messages.transcriptEdits(sql, sessionId);
  if (edits === null) throw new NotFoundError(`no stored session ${JSON.stringify(sessionId)}`);
  const anchored = afterId === 0 || (await messages.isVisibleMessage(sql, sessionId, afterId));
  return { edits, anchored, messages: await messages.loadVisibleMessagesAfter(sql, sessionId, afterId) };
}

export async function loadTranscriptPage(
  sql: Sql,
  sessionId: string,
  options: TranscriptPageOptions,
): Promise<TranscriptPage> {
  const limit = options.limit;
  checkLimit(limit, 1000);
  const page = await messages.loadVisiblePage(sql, sessionId, options.beforeId ?? null, limit + 1);
  const more = page.length > limit;
  return { messages: more ? page.slice(1) : page, hasMore: more };
}

export function checkRewindTurns(n: number): void {
  if (!Number.isInteger(n) || n < 1) throw new InvalidParamsError(`n must be a positive integer, got ${n}`);
}

/** The n-th last user message and everything after it soft-deleted, with one audit row. */
export async function rewindInTransaction(
  sql: Sql,
  sessionId: string,
  n: number,
  at: string,
  requestKey: string | null,
): Promise<RewindResult> {
  const users = await messages.lastUserMessages(sql, sessionId, n);
  const target = users[users.length - 1];
  if (target === undefined) return { rewound_count: 0, turns_undone: 0, target_text: null };
  const rewindId = await messages.insertRewindAudit(sql, {
    sessionId,
    at,
    turnsRequested: n,
    turnsUndone: users.length,
    firstMessageId: target.id,
    targetText: target.content,
    requestKey,
  });
  const count = await messages.rewindFrom(sql, sessionId, target.id, rewindId, at);
  return { rewound_count: count, turns_undone: users.length, target_text: target.content };
}

export async function searchMessages(
  db: PgDatabase,
  query: string,
  options: SearchOptions = {},
): Promise<SearchHit[]> {
  if (query.trim() === '') throw new InvalidParamsError('search query is empty');
  const limit = options.limit ?? 20;
  checkLimit(limit, SEARCH_LIMIT_MAX);
  const tsquery = options.syntax === 'fts' ? ftsTsQuery(query) : plainTsQuery(query);
  if ((await catchUpSearchIndex(db)) === null) await rebuildSearchIndex(db);
  if (tsquery === null) return [];
  return db.exclusive((sql) =>
    search.searchIndex(sql, tsquery, { sessionId: options.sessionId ?? null, limit }),
  );
}

export function rebuildSearchIndex(db: PgDatabase): Promise<void> {
  return db.transaction((sql) => search.rebuildIndex(sql));
}

export async function searchIndexStatus(db: PgDatabase): Promise<SearchIndexStatus> {
  return { stale: (await catchUpSearchIndex(db)) === null };
}

/**
 * Indexes the messages written since the last catch-up (null when the index is stale). A failure
 * that is not the store's (GatehouseError) marks the index for a rebuild.
 */
async function catchUpSearchIndex(db: PgDatabase): Promise<number | null> {
  try {
    return await db.transaction((sql) => search.catchUpIndex(sql));
  } catch (error) {
    if (error instanceof GatehouseError) throw error;
    await db.transaction((sql) => search.markIndexStale(sql));
    return null;
  }
}

/** How long after a write the index catches up: writes in between share one catch-up. */
const INDEX_CATCH_UP_DELAY_MS = 200;
const catchUps = new WeakMap<PgDatabase, NodeJS.Timeout>();

function scheduleIndexCatchUp(db: PgDatabase): void {
  if (catchUps.has(db)) return;
  const timer = setTimeout(() => {
    catchUps.delete(db);
    if (db.failed) return;
    // The store is busy or unavailable: the next write or search catches up instead.
    catchUpSearchIndex(db).catch(() => undefined);
  }, INDEX_CATCH_UP_DELAY_MS);
  timer.unref();
  catchUps.set(db, timer);
}

/** Stops a pending catch-up (the connection is closing); the next search catches up instead. */
export function cancelIndexCatchUp(db: PgDatabase): void {
  clearTimeout(catchUps.get(db));
  catchUps.delete(db);
}
