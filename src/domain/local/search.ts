/**
 * `session.search` (SPEC UX-1): full-text search over stored messages, restricted to the sessions
 * the caller may open — the same rule as `session.list` with the stored scope. Hits of other
 * sessions are dropped before the limit, so a caller learns nothing about what it may not see.
 */
import type { LocalSessionStore } from '../ports/local-store.js';
import type { SessionStore } from '../ports/session-store.js';
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
  // A hit names its physical transcript; a reset or a compression moved the session to a child,
  // and every transcript of its lineage is found (and reported) under the logical id.
  const verdicts = new Map<string, string | null>();
  const visibleAs = async (sessionId: string): Promise<string | null> => {
    let logical = verdicts.get(sessionId);
    if (logical === undefined) {
      const id = await store.logicalIdOfTranscript(sessionId);
      const row = id === null ? null : await store.getLocalSession(id);
      const ok =
        row !== null &&
        mayAccess(principal, row) &&
        (isOwner(principal, row) || row.owner.provider !== 'worker');
      logical = ok ? id : null;
      verdicts.set(sessionId, logical);
    }
    return logical;
  };
  const visible: SearchResult['hits'] = [];
  for (const h of hits) {
    if (visible.length === options.limit) break;
    const sessionId = await visibleAs(h.session_id);
    if (sessionId !== null)
      visible.push({ session_id: sessionId, role: h.role, snippet: h.snippet, timestamp: h.timestamp });
  }
  return { query: options.query, hits: visible };
}
