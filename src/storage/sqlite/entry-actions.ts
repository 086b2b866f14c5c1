/**
 * The routing-map actions of the SQLite store (ENT-2, STO-2): each is one transaction over the
 * entry, the physical session rows and the turn markers. Decisions come from
 * domain/session/lifecycle.ts; SQL lives in ops/.
 */
import { NotFoundError } from '../../domain/errors.js';
import {
  decideAccess,
  mayMarkResumePending,
  newEntry,
  ZERO_COUNTERS,
} from '../../domain/session/lifecycle.js';
import type { ResumeReason, SessionEntry, SessionSourceFields } from '../../domain/vocabulary.js';
import type {
  ListSessionsOptions,
  SessionAccess,
  SessionPage,
  UsageUpdate,
} from '../../domain/ports/session-store.js';
import {
  checkAccessInput,
  checkLimit,
  CLEAR_FLAGS,
  markerIsCurrent,
} from '../../domain/ports/store-rules.js';
import { newId, tx } from './actions-common.js';
import { decodeCursor, encodeCursor } from '../rows/cursor.js';
import type { SqliteDatabase } from './database.js';
import * as routes from './ops/routes.js';
import * as sessions from './ops/sessions.js';
import * as markers from './ops/turn-markers.js';

export function getOrCreateSession(
  db: SqliteDatabase,
  sessionKey: string,
  source: SessionSourceFields,
  options: { forceNew?: boolean; now?: Date } = {},
): SessionAccess {
  checkAccessInput(sessionKey, source);
  const now = options.now ?? new Date();
  const at = now.toISOString();
  return tx(db, (): SessionAccess => {
    const entry = routes.readRoute(db, sessionKey);
    const decision = decideAccess(entry, options);
    switch (decision.kind) {
      case 'create':
      case 'replace': {
        const replaced = entry?.session_id ?? null;
        const hadActivity = replaced !== null && sessions.sessionHasMessages(db, replaced);
        if (replaced !== null) {
          sessions.closeSession(db, replaced, decision.kind === 'replace' ? 'suspended' : 'force_new', at);
        }
        const sessionId = newId(now);
        sessions.insertSession(db, { sessionId, sessionKey, origin: source, createdAt: at });
        const fresh = newEntry(sessionKey, sessionId, source, at);
        if (decision.kind === 'replace') {
          fresh.was_auto_reset = true;
          fresh.auto_reset_reason = decision.reason;
          fresh.reset_had_activity = hadActivity;
        }
        routes.writeRoute(db, fresh);
        return {
          entry: fresh,
          kind: decision.kind === 'create' ? 'created' : 'replaced',
          closedSessionId: replaced,
        };
      }
      case 'resume_pending':
      case 'touch': {
        const current = entry!;
        const touched: SessionEntry = {
          ...current,
          updated_at: at,
          display_name: source.chat_name ?? current.display_name,
        };
        routes.writeRoute(db, touched);
        return {
          entry: touched,
          kind: decision.kind === 'touch' ? 'touched' : 'resumed',
          closedSessionId: null,
        };
      }
    }
  });
}

export function updateSession(
  db: SqliteDatabase,
  sessionKey: string,
  options: { lastPromptTokens?: number; now?: Date } = {},
): SessionEntry | null {
  return modify(db, sessionKey, (entry) => ({
    ...entry,
    updated_at: (options.now ?? new Date()).toISOString(),
    last_prompt_tokens: options.lastPromptTokens ?? entry.last_prompt_tokens,
  }));
}

export function resetSession(
  db: SqliteDatabase,
  sessionKey: string,
  options: { displayName?: string; now?: Date } = {},
): SessionEntry | null {
  const now = options.now ?? new Date();
  return tx(db, () => {
    const entry = routes.readRoute(db, sessionKey);
    if (entry === null) return null;
    return resetInTransaction(db, entry, newId(now), now.toISOString(), options.displayName);
  });
}

/**
 * The reset inside the caller's transaction: the entry's physical session is closed (`reset`, at
 * `at`), `sessionId` is created as its child (lineage kind `reset`) with empty history, and the route
 * points at it with counters zeroed and `is_fresh_reset` set. Returns the new entry.
 */
export function resetInTransaction(
  db: SqliteDatabase,
  entry: SessionEntry,
  sessionId: string,
  at: string,
  displayName?: string,
): SessionEntry {
  const sessionKey = entry.session_key;
  sessions.closeSession(db, entry.session_id, 'reset', at);
  sessions.insertSession(db, {
    sessionId,
    sessionKey,
    origin: entry.origin,
    createdAt: at,
    parent: { sessionId: entry.session_id, kind: 'reset' },
  });
  const fresh: SessionEntry = {
    ...(entry.origin === null ? entry : newEntry(sessionKey, sessionId, entry.origin, at)),
    ...ZERO_COUNTERS,
    ...CLEAR_FLAGS,
    session_id: sessionId,
    created_at: at,
    updated_at: at,
    display_name: displayName ?? entry.display_name,
    is_fresh_reset: true,
  };
  routes.writeRoute(db, fresh);
  return fresh;
}

export function switchSession(
  db: SqliteDatabase,
  sessionKey: string,
  targetSessionId: string,
  options: { expectedSessionId?: string; sameKey?: boolean; now?: Date } = {},
): SessionEntry | null {
  const at = (options.now ?? new Date()).toISOString();
  return tx(db, () => {
    const entry = routes.readRoute(db, sessionKey);
    if (entry === null) return null;
    if (options.expectedSessionId !== undefined && entry.session_id !== options.expectedSessionId)
      return null;
    const target = sessions.readSession(db, targetSessionId);
    if (target === null || (options.sameKey === true && target.session_key !== sessionKey)) {
      throw new NotFoundError(`no stored session ${JSON.stringify(targetSessionId)} to switch to`);
    }
    if (entry.session_id !== targetSessionId) sessions.closeSession(db, entry.session_id, 'switched', at);
    sessions.reopenSession(db, targetSessionId, sessionKey);
    const switched: SessionEntry = {
      ...entry,
      ...CLEAR_FLAGS,
      session_id: targetSessionId,
      updated_at: at,
    };
    routes.writeRoute(db, switched);
    return switched;
  });
}

export function suspendSession(db: SqliteDatabase, sessionKey: string): boolean {
  return modify(db, sessionKey, (entry) => ({ ...entry, suspended: true })) !== null;
}

export function markResumePending(
  db: SqliteDatabase,
  sessionKey: string,
  reason: ResumeReason,
  options: { now?: Date } = {},
): boolean {
  const at = (options.now ?? new Date()).toISOString();
  return tx(db, () => {
    const entry = routes.readRoute(db, sessionKey);
    if (entry === null || !mayMarkResumePending(entry)) return false;
    routes.writeRoute(db, {
      ...entry,
      resume_pending: true,
      resume_reason: reason,
      last_resume_marked_at: at,
    });
    return true;
  });
}

export function clearResumePending(db: SqliteDatabase, sessionKey: string): boolean {
  return tx(db, () => {
    const entry = routes.readRoute(db, sessionKey);
    if (entry === null || !entry.resume_pending) return false;
    routes.writeRoute(db, { ...entry, resume_pending: false, resume_reason: null });
    return true;
  });
}

export function markTurnStarted(db: SqliteDatabase, sessionKey: string, options: { now?: Date } = {}): void {
  tx(db, () => {
    const entry = routes.readRoute(db, sessionKey);
    if (entry === null) throw new NotFoundError(`no session on key ${JSON.stringify(sessionKey)}`);
    markers.putTurnMarker(db, sessionKey, entry.session_id, options.now ?? new Date());
  });
}

export function clearTurnMarker(db: SqliteDatabase, sessionKey: string): void {
  tx(db, () => markers.deleteTurnMarker(db, sessionKey));
}

export function recoverInterruptedTurns(
  db: SqliteDatabase,
  options: { maxAgeSeconds: number; now?: Date },
): string[] {
  const now = options.now ?? new Date();
  // Compared as epoch seconds, so a restart in another time zone reads markers the same way.
  const oldest = Math.floor(now.getTime() / 1000) - options.maxAgeSeconds;
  return tx(db, () => {
    const marked: string[] = [];
    for (const marker of markers.listTurnMarkers(db)) {
      if (marker.started_at_epoch < oldest) continue;
      const entry = routes.readRoute(db, marker.session_key);
      if (!markerIsCurrent(entry, marker) || !mayMarkResumePending(entry)) continue;
      routes.writeRoute(db, {
        ...entry,
        resume_pending: true,
        resume_reason: 'restart_interrupted',
        last_resume_marked_at: now.toISOString(),
      });
      marked.push(marker.session_key);
    }
    markers.deleteAllTurnMarkers(db);
    return marked;
  });
}

export function pruneOldEntries(
  db: SqliteDatabase,
  options: {
    maxAgeDays: number;
    liveSessionKeys?: ReadonlySet<string>;
    now?: Date;
  },
): string[] {
  if (!(options.maxAgeDays > 0)) return [];
  const now = options.now ?? new Date();
  const before = new Date(now.getTime() - options.maxAgeDays * 86_400_000).toISOString();
  return tx(db, () => {
    const removed: string[] = [];
    for (const key of routes.listPrunableRoutes(db, before)) {
      if (options.liveSessionKeys?.has(key) === true) continue;
      const entry = routes.readRoute(db, key)!;
      sessions.closeSession(db, entry.session_id, 'pruned', now.toISOString());
      routes.deleteRoute(db, key);
      markers.deleteTurnMarker(db, key);
      removed.push(key);
    }
    return removed;
  });
}

export function listSessions(db: SqliteDatabase, options: ListSessionsOptions = {}): SessionPage {
  const limit = options.limit ?? 100;
  checkLimit(limit, 1000);
  const since =
    options.activeMinutes === undefined
      ? null
      : new Date((options.now ?? new Date()).getTime() - options.activeMinutes * 60_000).toISOString();
  const after = options.cursor == null ? null : decodeCursor(options.cursor);
  const page = routes.listRoutePage(db, { after, since, limit: limit + 1 });
  const entries = page.slice(0, limit);
  const last = entries[entries.length - 1];
  return { entries, nextCursor: page.length > limit && last ? encodeCursor(last) : null };
}

export function lookupBySessionId(db: SqliteDatabase, sessionId: string): SessionEntry | null {
  return routes.findRouteBySessionId(db, sessionId);
}

export function hasAnySessions(db: SqliteDatabase): boolean {
  return routes.countRoutes(db) > 0 || sessions.anySessionExists(db);
}

export function addUsage(db: SqliteDatabase, sessionKey: string, usage: UsageUpdate): SessionEntry | null {
  return tx(db, () =>
    routes.addRouteUsage(db, sessionKey, usage) ? routes.readRoute(db, sessionKey) : null,
  );
}

/** Read, change and write one entry in a transaction; null when the key has no entry. */
function modify(
  db: SqliteDatabase,
  sessionKey: string,
  change: (entry: SessionEntry) => SessionEntry,
): SessionEntry | null {
  return tx(db, () => {
    const entry = routes.readRoute(db, sessionKey);
    if (entry === null) return null;
    const next = change(entry);
    routes.writeRoute(db, next);
    return next;
  });
}

export { markerIsCurrent };
