/**
 * `session.search` (SPEC UX-1): full-text search over stored messages, restricted to the sessions
 * the caller may open — the same rule as `session.list` with the stored scope. Hits of other
 * sessions are dropped before the limit, so a caller learns nothing about what it may not see.
 */
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
import type { Principal } from '../auth/principal.js';
import { SEARCH_LIMIT_MAX } from '../ports/store-rules.js';
import { isOwner, mayAccess } from './access.js';

export interface SearchResult {
  query: string;
  hits: {
    session_id: string;
    /** The session's title (null: never titled), so a hit is named as the list names it. */
    title: string | null;
    /** The stored message's id, for opening the session at the hit (`session.messages`). */
    message_id: number;
    role: string;
    snippet: string;
    timestamp: string;
  }[];
}

/**
 * How many hits are asked of the index, at most, to fill one page after dropping copies: the most
 * one store call returns (a larger scan was refused by the store for any limit above 125).
 */
const MAX_SCAN = SEARCH_LIMIT_MAX;

export async function searchVisible(
  sessions: SessionStore,
  store: LocalSessionStore,
  principal: Principal,
  options: { query: string; limit: number; syntax: 'plain' | 'fts' },
  /** The sessions an operator shared with this member (empty for anyone else). */
  shared: ReadonlySet<string> = new Set(),
): Promise<SearchResult> {
  // A hit names its physical transcript; a reset or a compression moved the session to a child,
  // and every transcript of its lineage is found (and reported) under the logical id.
  const verdicts = new Map<string, { id: string; title: string | null } | null>();
  const visibleAs = async (sessionId: string): Promise<{ id: string; title: string | null } | null> => {
    let logical = verdicts.get(sessionId);
    if (logical === undefined) {
      const id = await store.logicalIdOfTranscript(sessionId);
      const row = id === null ? null : await store.getLocalSession(id);
      const ok =
        row !== null &&
        mayAccess(principal, row, shared) &&
        (isOwner(principal, row) || row.owner.provider !== 'worker');
      logical = ok && id !== null ? { id, title: row.title ?? null } : null;
      verdicts.set(sessionId, logical);
    }
    return logical;
  };
  // Ask for more than the limit: some hits belong to sessions this caller may not open, and some
  // are copies. A compression copies the first exchange and the recent tail into the child
  // transcript, so one message of a logical session is stored (and indexed) once per compression;
  // it is reported once (issue 26 item 2): the same role and text in another transcript of the
  // same logical session is a copy. Two equal messages of one transcript are two messages.
  let scan = Math.min(MAX_SCAN, options.limit * 4);
  for (;;) {
    const hits = await sessions.searchMessages(options.query, { limit: scan, syntax: options.syntax });
    const visible: SearchResult['hits'] = [];
    const seen = new Map<string, { transcript: string; at: number }>();
    for (const h of hits) {
      if (visible.length === options.limit) break;
      const logical = await visibleAs(h.session_id);
      if (logical === null) continue;
      const sessionId = logical.id;
      const key = JSON.stringify([sessionId, h.role, h.snippet]);
      const first = seen.get(key);
      if (first !== undefined && first.transcript !== h.session_id) {
        // Hits come newest first: the older copy is the original, and its time is the message's.
        visible[first.at]!.timestamp = h.timestamp;
        visible[first.at]!.message_id = h.message_id;
        continue;
      }
      seen.set(key, { transcript: h.session_id, at: visible.length });
      visible.push({
        session_id: sessionId,
        title: logical.title,
        message_id: h.message_id,
        role: h.role,
        snippet: h.snippet,
        timestamp: h.timestamp,
      });
    }
    if (visible.length === options.limit || hits.length < scan || scan >= MAX_SCAN)
      return { query: options.query, hits: visible };
    scan = Math.min(MAX_SCAN, scan * 4);
  }
}
