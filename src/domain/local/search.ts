/**
 * `session.search` (SPEC UX-1): full-text search over stored messages, restricted to the sessions
 * the caller may open — the same rule as `session.list` with the stored scope. Hits of other
 * sessions are dropped before the limit, so a caller learns nothing about what it may not see.
 */
import type { LocalSessionStore } from '../../storage/local-store.js';
import type { SessionStore } from '../../storage/session-store.js';
import type { Principal } from '../auth/principal.js';
import { isOwner, mayAccess } from './access.js';

export interface SearchResult {
  query: string;
  hits: { session_id: string; role: string; snippet: string; timestamp: string }[];
}

export async function searchVisible(
  sessions: SessionStore,
  store: LocalSessionStore,
  principal: Principal,
  options: { query: string; limit: number; syntax: 'plain' | 'fts' },
): Promise<SearchResult> {
  // Ask for more than the limit: some hits may belong to sessions this caller may not open.
  const hits = await sessions.searchMessages(options.query, {
    limit: Math.min(500, options.limit * 4),
    syntax: options.syntax,
  });
  const verdicts = new Map<string, boolean>();
  const visible = (sessionId: string): boolean => {
    let ok = verdicts.get(sessionId);
    if (ok === undefined) {
      const row = store.getLocalSession(sessionId);
      ok =
        row !== null &&
        mayAccess(principal, row) &&
        (isOwner(principal, row) || row.owner.provider !== 'worker');
      verdicts.set(sessionId, ok);
    }
    return ok;
  };
  return {
    query: options.query,
    hits: hits
      .filter((h) => visible(h.session_id))
      .slice(0, options.limit)
      .map((h) => ({ session_id: h.session_id, role: h.role, snippet: h.snippet, timestamp: h.timestamp })),
  };
}
