/**
 * The transcript actions of the SQLite store (STO-2, STO-4). Messages are canonical; the full-text
 * index catches up with them shortly after each write and before every search (ops/search-index.ts),
 * and is rebuilt when stale.
 */
import { GatehouseError, InvalidParamsError, NotFoundError } from '../../domain/errors.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type {
  RewindResult,
  SearchHit,
  SearchIndexStatus,
  SearchOptions,
  StoredMessage,
  TranscriptTail,
  TranscriptPage,
  TranscriptPageOptions,
} from '../../domain/ports/session-store.js';
import { checkLimit, validateMessages, SEARCH_LIMIT_MAX } from '../../domain/ports/store-rules.js';
import { requireSession, tx } from './actions-common.js';
import type { SqliteDatabase } from './database.js';
import { atSynchronousNormal } from './statements.js';
import * as messages from './ops/messages.js';
import * as search from './ops/search-index.js';

export function appendToTranscript(
  db: SqliteDatabase,
  sessionId: string,
  input: TranscriptMessage | readonly TranscriptMessage[],
  options: { skipDb?: boolean; now?: Date } = {},
): StoredMessage[] {
  const list = validateMessages(Array.isArray(input) ? input : [input as TranscriptMessage]);
  if (options.skipDb === true || list.length === 0) return [];
  const now = options.now ?? new Date();
  return tx(db, () => {
    requireSession(db, sessionId);
    return appendInTransaction(db, sessionId, list, now);
  });
}

/**
 * Appends inside the caller's write transaction, and schedules the index catch-up. The session is
 * not checked: group-commit operations call this directly because a route names the session (a
 * missing one still fails, on the foreign key); that is the hot path of every turn.
 */
export function appendInTransaction(
  db: SqliteDatabase,
  sessionId: string,
  input: TranscriptMessage | readonly TranscriptMessage[],
  now: Date,
): StoredMessage[] {
  if (!db.inTransaction) throw new Error('appendInTransaction needs an open write transaction');
  const list = validateMessages(Array.isArray(input) ? input : [input as TranscriptMessage]);
  if (list.length === 0) return [];
  const stored = messages.insertMessages(db, sessionId, list, now.toISOString());
  scheduleIndexCatchUp(db);
  return stored;
}

/** How long after a write the index catches up: writes in between share one index segment. */
const INDEX_CATCH_UP_DELAY_MS = 200;
const catchUps = new WeakMap<SqliteDatabase, NodeJS.Timeout>();

function scheduleIndexCatchUp(db: SqliteDatabase): void {
  if (catchUps.has(db)) return;
  const timer = setTimeout(() => {
    catchUps.delete(db);
    if (!db.open) return;
    try {
      catchUpSearchIndex(db);
    } catch {
      // The store is busy or unavailable: the next write or search catches up instead.
    }
  }, INDEX_CATCH_UP_DELAY_MS);
  timer.unref();
  catchUps.set(db, timer);
}

/** Stops a pending catch-up (the connection is closing); the next open catches up on search. */
export function cancelIndexCatchUp(db: SqliteDatabase): void {
  clearTimeout(catchUps.get(db));
  catchUps.delete(db);
}

/**
 * Indexes the messages written since the last catch-up (null when the index is stale). Derived
 * data, so committed without a flush of its own: if a crash takes the batch away, it takes the
 * watermark with it, and the next catch-up indexes those messages again.
 */
function catchUpSearchIndex(db: SqliteDatabase): number | null {
  try {
    return atSynchronousNormal(db, () => tx(db, () => search.catchUpIndex(db)));
  } catch (error) {
    // A store that cannot be written is the caller's problem; anything else is the index's (some
    // corruption aborts the whole transaction rather than the savepoint): mark it for a rebuild.
    if (error instanceof GatehouseError) throw error;
    search.markIndexStale(db);
    return null;
  }
}

export function rewriteTranscript(
  db: SqliteDatabase,
  sessionId: string,
  input: readonly TranscriptMessage[],
  options: { now?: Date } = {},
): StoredMessage[] {
  const list = validateMessages(input);
  const now = options.now ?? new Date();
  return tx(db, () => {
    requireSession(db, sessionId);
    messages.removeVisibleMessages(db, sessionId, 'rewrite', now.toISOString());
    return appendInTransaction(db, sessionId, list, now);
  });
}

export function loadTranscript(db: SqliteDatabase, sessionId: string): StoredMessage[] {
  return messages.loadVisibleMessages(db, sessionId);
}

/** Messages per slice of a transcript read in slices; other work runs between two slices. */
export const TRANSCRIPT_SLICE = 1_000;
/** Reads started again because the transcript was edited between two slices, before one whole read. */
const SLICED_READS = 3;

/**
 * The visible transcript, read in slices of `slice` messages with the event loop free between them,
 * so a long history does not stop every other session while it is read. Each slice is one
 * statement; the result is still one state of the transcript: appends only add messages after the
 * ones already read, and any other change (a rewind, a rewrite) bumps the session's edit counter
 * (migration 009), checked with every slice, which starts the read again. After SLICED_READS such
 * restarts the transcript is read in one statement, as loadTranscript does.
 */
export async function loadTranscriptInSlices(
  db: SqliteDatabase,
  sessionId: string,
  slice = TRANSCRIPT_SLICE,
): Promise<StoredMessage[]> {
  for (let attempt = 0; attempt < SLICED_READS; attempt++) {
    const edits = messages.transcriptEdits(db, sessionId);
    if (edits === null) return [];
    const out: StoredMessage[] = [];
    for (let after = 0; ;) {
      const page = messages.loadVisibleSlice(db, sessionId, after, slice);
      if (messages.transcriptEdits(db, sessionId) !== edits) break;
      for (const message of page) out.push(message);
      if (page.length < slice) return out;
      after = page[page.length - 1]!.id;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  return messages.loadVisibleMessages(db, sessionId);
}

/** The first TRANSCRIPT_SLICE visible messages, in one statement (all of a transcript shorter than that). */
export function loadTranscriptStart(db: SqliteDatabase, sessionId: string): StoredMessage[] {
  return messages.loadVisibleSlice(db, sessionId, 0, TRANSCRIPT_SLICE);
}

/**
 * What changed in a transcript since a copy of it ended at message `afterId` (0: an empty copy).
 * Synchronous on one connection, so the three reads see one state.
 */
export function loadTranscriptTail(db: SqliteDatabase, sessionId: string, afterId: number): TranscriptTail {
  const edits = messages.transcriptEdits(db, sessionId);
  if (edits === null) throw new NotFoundError(`no stored session ${JSON.stringify(sessionId)}`);
  const anchored = afterId === 0 || messages.isVisibleMessage(db, sessionId, afterId);
  return { edits, anchored, messages: messages.loadVisibleMessagesAfter(db, sessionId, afterId) };
}

export function loadTranscriptPage(
  db: SqliteDatabase,
  sessionId: string,
  options: TranscriptPageOptions,
): TranscriptPage {
  const limit = options.limit;
  checkLimit(limit, 1000);
  const page = messages.loadVisiblePage(db, sessionId, options.beforeId ?? null, limit + 1);
  const more = page.length > limit;
  return { messages: more ? page.slice(1) : page, hasMore: more };
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
    return rewindInTransaction(db, sessionId, n, at, null);
  });
}

/**
 * The rewind inside the caller's transaction: the n-th last user message and everything after it
 * are soft-deleted, tagged with one audit row (carrying `requestKey` when a request asked for it).
 */
export function rewindInTransaction(
  db: SqliteDatabase,
  sessionId: string,
  n: number,
  at: string,
  requestKey: string | null,
): RewindResult {
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
    requestKey,
  });
  const count = messages.rewindFrom(db, sessionId, target.id, rewindId, at);
  return { rewound_count: count, turns_undone: users.length, target_text: target.content };
}

export function searchMessages(db: SqliteDatabase, query: string, options: SearchOptions = {}): SearchHit[] {
  if (query.trim() === '') throw new InvalidParamsError('search query is empty');
  const limit = options.limit ?? 20;
  checkLimit(limit, SEARCH_LIMIT_MAX);
  if (catchUpSearchIndex(db) === null) rebuildSearchIndex(db);
  return search.searchIndex(db, query, {
    sessionId: options.sessionId ?? null,
    limit,
    syntax: options.syntax ?? 'plain',
  });
}

export function rebuildSearchIndex(db: SqliteDatabase): void {
  tx(db, () => search.rebuildIndex(db));
}

/** Whether the index can answer now: it catches up first, which is where a broken index shows. */
export function searchIndexStatus(db: SqliteDatabase): SearchIndexStatus {
  return { stale: catchUpSearchIndex(db) === null };
}
