/**
 * The routing-map actions of the PostgreSQL store (ENT-2, STO-2), one per contract operation, each
 * the body of one transaction over the entry, the physical session rows and the turn markers (the
 * caller opens it: session-store.ts, or the group commit). Decisions come from
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
import { decodeCursor, encodeCursor } from '../rows/cursor.js';
import {
  checkAccessInput,
  checkLimit,
  CLEAR_FLAGS,
  markerIsCurrent,
} from '../../domain/ports/store-rules.js';
import { newId } from './actions-common.js';
import type { Sql } from './database.js';
import * as routes from './ops/routes.js';
import * as sessions from './ops/sessions.js';
import * as markers from './ops/turn-markers.js';

export { checkAccessInput, markerIsCurrent };

export async function getOrCreateSession(
  sql: Sql,
  sessionKey: string,
  source: SessionSourceFields,
  options: { forceNew?: boolean; now?: Date } = {},
): Promise<SessionAccess> {
  checkAccessInput(sessionKey, source);
  const now = options.now ?? new Date();
  const at = now.toISOString();
  const entry = await routes.readRoute(sql, sessionKey);
  const decision = decideAccess(entry, options);
  switch (decision.kind) {
    case 'create':
    case 'replace': {
      const replaced = entry?.session_id ?? null;
      const hadActivity = replaced !== null && (await sessions.sessionHasMessages(sql, replaced));
      if (replaced !== null) {
        await sessions.closeSession(
          sql,
          replaced,
          decision.kind === 'replace' ? 'suspended' : 'force_new',
          at,
        );
      }
      const sessionId = newId(now);
      await sessions.insertSession(sql, { sessionId, sessionKey, origin: source, createdAt: at });
      const fresh = newEntry(sessionKey, sessionId, source, at);
      if (decision.kind === 'replace') {
        fresh.was_auto_reset = true;
        fresh.auto_reset_reason = decision.reason;
        fresh.reset_had_activity = hadActivity;
      }
      await routes.writeRoute(sql, fresh);
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
      await routes.writeRoute(sql, touched);
      return {
        entry: touched,
        kind: decision.kind === 'touch' ? 'touched' : 'resumed',
        closedSessionId: null,
      };
    }
  }
}

export function updateSession(
  sql: Sql,
  sessionKey: string,
  options: { lastPromptTokens?: number; now?: Date } = {},
): Promise<SessionEntry | null> {
  return modify(sql, sessionKey, (entry) => ({
    ...entry,
    updated_at: (options.now ?? new Date()).toISOString(),
    last_prompt_tokens: options.lastPromptTokens ?? entry.last_prompt_tokens,
  }));
}

export async function resetSession(
  sql: Sql,
  sessionKey: string,
  options: { displayName?: string; now?: Date } = {},
): Promise<SessionEntry | null> {
  const now = options.now ?? new Date();
  const entry = await routes.readRoute(sql, sessionKey);
  if (entry === null) return null;
  return resetInTransaction(sql, entry, newId(now), now.toISOString(), options.displayName);
}

/** The reset inside the caller's transaction (see the SQLite store's resetInTransaction). */
export async function resetInTransaction(
  sql: Sql,
  entry: SessionEntry,
  sessionId: string,
  at: string,
  displayName?: string,
): Promise<SessionEntry> {
  const sessionKey = entry.session_key;
  await sessions.closeSession(sql, entry.session_id, 'reset', at);
  await sessions.insertSession(sql, {
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
  await routes.writeRoute(sql, fresh);
  return fresh;
}

export async function switchSession(
  sql: Sql,
  sessionKey: string,
  targetSessionId: string,
  options: { expectedSessionId?: string; sameKey?: boolean; now?: Date } = {},
): Promise<SessionEntry | null> {
  const at = (options.now ?? new Date()).toISOString();
  const entry = await routes.readRoute(sql, sessionKey);
  if (entry === null) return null;
  if (options.expectedSessionId !== undefined && entry.session_id !== options.expectedSessionId) return null;
  const target = await sessions.readSession(sql, targetSessionId);
  if (target === null || (options.sameKey === true && target.session_key !== sessionKey)) {
    throw new NotFoundError(`no stored session ${JSON.stringify(targetSessionId)} to switch to`);
  }
  if (entry.session_id !== targetSessionId)
    await sessions.closeSession(sql, entry.session_id, 'switched', at);
  await sessions.reopenSession(sql, targetSessionId, sessionKey);
  const switched: SessionEntry = { ...entry, ...CLEAR_FLAGS, session_id: targetSessionId, updated_at: at };
  await routes.writeRoute(sql, switched);
  return switched;
}

export async function suspendSession(sql: Sql, sessionKey: string): Promise<boolean> {
  return (await modify(sql, sessionKey, (entry) => ({ ...entry, suspended: true }))) !== null;
}

export async function markResumePending(
  sql: Sql,
  sessionKey: string,
  reason: ResumeReason,
  options: { now?: Date } = {},
): Promise<boolean> {
  const at = (options.now ?? new Date()).toISOString();
  const entry = await routes.readRoute(sql, sessionKey);
  if (entry === null || !mayMarkResumePending(entry)) return false;
  await routes.writeRoute(sql, {
    ...entry,
    resume_pending: true,
    resume_reason: reason,
    last_resume_marked_at: at,
  });
  return true;
}

export async function clearResumePending(sql: Sql, sessionKey: string): Promise<boolean> {
  const entry = await routes.readRoute(sql, sessionKey);
  if (entry === null || !entry.resume_pending) return false;
  await routes.writeRoute(sql, { ...entry, resume_pending: false, resume_reason: null });
  return true;
}

export async function markTurnStarted(
  sql: Sql,
  sessionKey: string,
  options: { now?: Date } = {},
): Promise<void> {
  const entry = await routes.readRoute(sql, sessionKey);
  if (entry === null) throw new NotFoundError(`no session on key ${JSON.stringify(sessionKey)}`);
  await markers.putTurnMarker(sql, sessionKey, entry.session_id, options.now ?? new Date());
}

export function clearTurnMarker(sql: Sql, sessionKey: string): Promise<void> {
  return markers.deleteTurnMarker(sql, sessionKey);
}

export async function recoverInterruptedTurns(
  sql: Sql,
  options: { maxAgeSeconds: number; now?: Date },
): Promise<string[]> {
  const now = options.now ?? new Date();
  const oldest = Math.floor(now.getTime() / 1000) - options.maxAgeSeconds;
  const marked: string[] = [];
  for (const marker of await markers.listTurnMarkers(sql)) {
    if (marker.started_at_epoch < oldest) continue;
    const entry = await routes.readRoute(sql, marker.session_key);
    if (!markerIsCurrent(entry, marker) || !mayMarkResumePending(entry)) continue;
    await routes.writeRoute(sql, {
      ...entry,
      resume_pending: true,
      resume_reason: 'restart_interrupted',
      last_resume_marked_at: now.toISOString(),
    });
    marked.push(marker.session_key);
  }
  await markers.deleteAllTurnMarkers(sql);
  return marked;
}

export async function pruneOldEntries(
  sql: Sql,
  options: { maxAgeDays: number; liveSessionKeys?: ReadonlySet<string>; now?: Date },
): Promise<string[]> {
  if (!(options.maxAgeDays > 0)) return [];
  const now = options.now ?? new Date();
  const before = new Date(now.getTime() - options.maxAgeDays * 86_400_000).toISOString();
  const removed: string[] = [];
  for (const key of await routes.listPrunableRoutes(sql, before)) {
    if (options.liveSessionKeys?.has(key) === true) continue;
    const entry = (await routes.readRoute(sql, key))!;
    await sessions.closeSession(sql, entry.session_id, 'pruned', now.toISOString());
    await routes.deleteRoute(sql, key);
    await markers.deleteTurnMarker(sql, key);
    removed.push(key);
  }
  return removed;
}

export async function listSessions(sql: Sql, options: ListSessionsOptions = {}): Promise<SessionPage> {
  const limit = options.limit ?? 100;
  checkLimit(limit, 1000);
  const since =
    options.activeMinutes === undefined
      ? null
      : new Date((options.now ?? new Date()).getTime() - options.activeMinutes * 60_000).toISOString();
  const after = options.cursor == null ? null : decodeCursor(options.cursor);
  const page = await routes.listRoutePage(sql, { after, since, limit: limit + 1 });
  const entries = page.slice(0, limit);
  const last = entries[entries.length - 1];
  return { entries, nextCursor: page.length > limit && last ? encodeCursor(last) : null };
}

export async function hasAnySessions(sql: Sql): Promise<boolean> {
  return (await routes.countRoutes(sql)) > 0 || (await sessions.anySessionExists(sql));
}

export async function addUsage(
  sql: Sql,
  sessionKey: string,
  usage: UsageUpdate,
): Promise<SessionEntry | null> {
  return (await routes.addRouteUsage(sql, sessionKey, usage)) ? routes.readRoute(sql, sessionKey) : null;
}

async function modify(
  sql: Sql,
  sessionKey: string,
  change: (entry: SessionEntry) => SessionEntry,
): Promise<SessionEntry | null> {
  const entry = await routes.readRoute(sql, sessionKey);
  if (entry === null) return null;
  const next = change(entry);
  await routes.writeRoute(sql, next);
  return next;
}
