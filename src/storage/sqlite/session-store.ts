/**
 * SessionStore on SQLite. Orchestration only: every SQL statement lives in ops/, every decision
 * about what an access does lives in domain/session/lifecycle.ts. Each method is one IMMEDIATE
 * transaction, so the routing map, the physical rows and the messages change together or not at all.
 */
import { randomBytes } from 'node:crypto';
import { InvalidParamsError, NotFoundError } from '../../domain/errors.js';
import { decideAccess, mayMarkResumePending, newEntry, newSessionId } from '../../domain/session/lifecycle.js';
import {
  CHAT_TYPES,
  type ResumeReason,
  type SessionEntry,
  type SessionSourceFields,
  type TranscriptMessage,
} from '../../domain/vocabulary.js';
import type {
  ListSessionsOptions,
  RewindResult,
  SearchHit,
  SearchIndexStatus,
  SearchOptions,
  SessionAccess,
  SessionPage,
  SessionStore,
  StoredMessage,
  UsageUpdate,
} from '../session-store.js';
import { openDatabase, type OpenOptions, type SqliteDatabase } from './database.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import * as messages from './ops/messages.js';
import * as routes from './ops/routes.js';
import * as search from './ops/search-index.js';
import * as sessions from './ops/sessions.js';
import * as markers from './ops/turn-markers.js';

const MESSAGE_ROLES = new Set(['system', 'user', 'assistant', 'tool']);

export class SqliteSessionStore implements SessionStore {
  /** Opens (or creates) the database at `file`; throws StorageUnavailableError when it cannot. */
  static open(file: string, options?: OpenOptions): SqliteSessionStore {
    return new SqliteSessionStore(openDatabase(file, options));
  }

  constructor(readonly db: SqliteDatabase) {}

  private tx<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private newId(now: Date): string {
    return newSessionId(now, randomBytes(4).toString('hex'));
  }

  async getOrCreateSession(
    sessionKey: string,
    source: SessionSourceFields,
    options: { forceNew?: boolean; now?: Date } = {},
  ): Promise<SessionAccess> {
    requireKey(sessionKey);
    if (!(CHAT_TYPES as readonly string[]).includes(source.chat_type)) {
      throw new InvalidParamsError(`unknown chat_type ${JSON.stringify(source.chat_type)}`);
    }
    const now = options.now ?? new Date();
    const at = now.toISOString();
    return this.tx((): SessionAccess => {
      const entry = routes.readRoute(this.db, sessionKey);
      const decision = decideAccess(entry, options);
      switch (decision.kind) {
        case 'create':
        case 'replace': {
          const replaced = entry?.session_id ?? null;
          const hadActivity = replaced !== null && sessions.sessionHasMessages(this.db, replaced);
          if (replaced !== null) {
            sessions.closeSession(this.db, replaced, decision.kind === 'replace' ? 'suspended' : 'force_new', at);
          }
          const sessionId = this.newId(now);
          sessions.insertSession(this.db, { sessionId, sessionKey, origin: source, createdAt: at });
          const fresh = newEntry(sessionKey, sessionId, source, at);
          if (decision.kind === 'replace') {
            fresh.was_auto_reset = true;
            fresh.auto_reset_reason = decision.reason;
            fresh.reset_had_activity = hadActivity;
          }
          routes.writeRoute(this.db, fresh);
          return { entry: fresh, kind: decision.kind === 'create' ? 'created' : 'replaced', closedSessionId: replaced };
        }
        case 'resume_pending':
        case 'touch': {
          const current = entry!;
          const touched: SessionEntry = {
            ...current,
            updated_at: at,
            display_name: source.chat_name ?? current.display_name,
          };
          routes.writeRoute(this.db, touched);
          return { entry: touched, kind: decision.kind === 'touch' ? 'touched' : 'resumed', closedSessionId: null };
        }
      }
    });
  }

  async updateSession(
    sessionKey: string,
    options: { lastPromptTokens?: number; now?: Date } = {},
  ): Promise<SessionEntry | null> {
    return this.modify(sessionKey, (entry) => ({
      ...entry,
      updated_at: (options.now ?? new Date()).toISOString(),
      last_prompt_tokens: options.lastPromptTokens ?? entry.last_prompt_tokens,
    }));
  }

  async resetSession(
    sessionKey: string,
    options: { displayName?: string; now?: Date } = {},
  ): Promise<SessionEntry | null> {
    const now = options.now ?? new Date();
    const at = now.toISOString();
    return this.tx(() => {
      const entry = routes.readRoute(this.db, sessionKey);
      if (entry === null) return null;
      sessions.closeSession(this.db, entry.session_id, 'reset', at);
      const sessionId = this.newId(now);
      sessions.insertSession(this.db, { sessionId, sessionKey, origin: entry.origin, createdAt: at });
      const fresh: SessionEntry = {
        ...(entry.origin === null ? entry : newEntry(sessionKey, sessionId, entry.origin, at)),
        ...ZERO_COUNTERS,
        ...CLEAR_FLAGS,
        session_id: sessionId,
        created_at: at,
        updated_at: at,
        display_name: options.displayName ?? entry.display_name,
        is_fresh_reset: true,
      };
      routes.writeRoute(this.db, fresh);
      return fresh;
    });
  }

  async switchSession(
    sessionKey: string,
    targetSessionId: string,
    options: { expectedSessionId?: string; now?: Date } = {},
  ): Promise<SessionEntry | null> {
    const at = (options.now ?? new Date()).toISOString();
    return this.tx(() => {
      const entry = routes.readRoute(this.db, sessionKey);
      if (entry === null) return null;
      if (options.expectedSessionId !== undefined && entry.session_id !== options.expectedSessionId) return null;
      if (sessions.readSession(this.db, targetSessionId) === null) {
        throw new NotFoundError(`no stored session ${JSON.stringify(targetSessionId)} to switch to`);
      }
      if (entry.session_id !== targetSessionId) sessions.closeSession(this.db, entry.session_id, 'switched', at);
      sessions.reopenSession(this.db, targetSessionId, sessionKey);
      const switched: SessionEntry = { ...entry, ...CLEAR_FLAGS, session_id: targetSessionId, updated_at: at };
      routes.writeRoute(this.db, switched);
      return switched;
    });
  }

  async suspendSession(sessionKey: string): Promise<boolean> {
    return (await this.modify(sessionKey, (entry) => ({ ...entry, suspended: true }))) !== null;
  }

  async markResumePending(
    sessionKey: string,
    reason: ResumeReason,
    options: { now?: Date } = {},
  ): Promise<boolean> {
    const at = (options.now ?? new Date()).toISOString();
    return this.tx(() => {
      const entry = routes.readRoute(this.db, sessionKey);
      if (entry === null || !mayMarkResumePending(entry)) return false;
      routes.writeRoute(this.db, { ...entry, resume_pending: true, resume_reason: reason, last_resume_marked_at: at });
      return true;
    });
  }

  async clearResumePending(sessionKey: string): Promise<boolean> {
    return this.tx(() => {
      const entry = routes.readRoute(this.db, sessionKey);
      if (entry === null || !entry.resume_pending) return false;
      routes.writeRoute(this.db, { ...entry, resume_pending: false, resume_reason: null });
      return true;
    });
  }

  async markTurnStarted(sessionKey: string, options: { now?: Date } = {}): Promise<void> {
    this.tx(() => {
      const entry = routes.readRoute(this.db, sessionKey);
      if (entry === null) throw new NotFoundError(`no session on key ${JSON.stringify(sessionKey)}`);
      markers.putTurnMarker(this.db, sessionKey, entry.session_id, options.now ?? new Date());
    });
  }

  async clearTurnMarker(sessionKey: string): Promise<void> {
    this.tx(() => markers.deleteTurnMarker(this.db, sessionKey));
  }

  async recoverInterruptedTurns(options: { maxAgeSeconds: number; now?: Date }): Promise<string[]> {
    const now = options.now ?? new Date();
    // Compared as epoch seconds, so a restart in another time zone reads markers the same way.
    const oldest = Math.floor(now.getTime() / 1000) - options.maxAgeSeconds;
    return this.tx(() => {
      const marked: string[] = [];
      for (const marker of markers.listTurnMarkers(this.db)) {
        if (marker.started_at_epoch < oldest) continue;
        const entry = routes.readRoute(this.db, marker.session_key);
        if (entry === null || entry.session_id !== marker.session_id || !mayMarkResumePending(entry)) continue;
        routes.writeRoute(this.db, {
          ...entry,
          resume_pending: true,
          resume_reason: 'restart_interrupted',
          last_resume_marked_at: now.toISOString(),
        });
        marked.push(marker.session_key);
      }
      markers.deleteAllTurnMarkers(this.db);
      return marked;
    });
  }

  async pruneOldEntries(options: {
    maxAgeDays: number;
    hasLiveProcesses?: (sessionKey: string) => boolean;
    now?: Date;
  }): Promise<string[]> {
    if (!(options.maxAgeDays > 0)) return [];
    const now = options.now ?? new Date();
    const before = new Date(now.getTime() - options.maxAgeDays * 86_400_000).toISOString();
    return this.tx(() => {
      const removed: string[] = [];
      for (const key of routes.listPrunableRoutes(this.db, before)) {
        if (options.hasLiveProcesses?.(key) === true) continue;
        const entry = routes.readRoute(this.db, key)!;
        sessions.closeSession(this.db, entry.session_id, 'pruned', now.toISOString());
        routes.deleteRoute(this.db, key);
        markers.deleteTurnMarker(this.db, key);
        removed.push(key);
      }
      return removed;
    });
  }

  async listSessions(options: ListSessionsOptions = {}): Promise<SessionPage> {
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
      throw new InvalidParamsError(`limit must be an integer from 1 to 1000, got ${String(limit)}`);
    }
    const since =
      options.activeMinutes === undefined
        ? null
        : new Date((options.now ?? new Date()).getTime() - options.activeMinutes * 60_000).toISOString();
    const after = options.cursor == null ? null : decodeCursor(options.cursor);
    const page = routes.listRoutePage(this.db, { after, since, limit: limit + 1 });
    const entries = page.slice(0, limit);
    const last = entries[entries.length - 1];
    return { entries, nextCursor: page.length > limit && last ? encodeCursor(last) : null };
  }

  async lookupBySessionId(sessionId: string): Promise<SessionEntry | null> {
    return routes.findRouteBySessionId(this.db, sessionId);
  }

  async hasAnySessions(): Promise<boolean> {
    return routes.countRoutes(this.db) > 0 || sessions.anySessionExists(this.db);
  }

  async appendToTranscript(
    sessionId: string,
    input: TranscriptMessage | readonly TranscriptMessage[],
    options: { skipDb?: boolean; now?: Date } = {},
  ): Promise<StoredMessage[]> {
    const list = validateMessages(Array.isArray(input) ? input : [input as TranscriptMessage]);
    if (options.skipDb === true || list.length === 0) return [];
    const at = (options.now ?? new Date()).toISOString();
    const write = (index: boolean) =>
      this.tx(() => {
        this.requireSession(sessionId);
        const stored = messages.insertMessages(this.db, sessionId, list, at);
        if (index) search.indexMessages(this.db, stored);
        else search.markIndexStale(this.db);
        return stored;
      });
    try {
      return write(true);
    } catch (error) {
      if (error instanceof NotFoundError) throw error;
      // Some index failures abort the whole transaction; the messages must still land (STO-4).
      return write(false);
    }
  }

  async rewriteTranscript(
    sessionId: string,
    input: readonly TranscriptMessage[],
    options: { now?: Date } = {},
  ): Promise<StoredMessage[]> {
    const list = validateMessages(input);
    const at = (options.now ?? new Date()).toISOString();
    return this.tx(() => {
      this.requireSession(sessionId);
      messages.removeVisibleMessages(this.db, sessionId, 'rewrite', at);
      const stored = messages.insertMessages(this.db, sessionId, list, at);
      search.indexMessages(this.db, stored);
      return stored;
    });
  }

  async loadTranscript(sessionId: string): Promise<StoredMessage[]> {
    return messages.loadVisibleMessages(this.db, sessionId);
  }

  async rewindSession(sessionId: string, n = 1, options: { now?: Date } = {}): Promise<RewindResult> {
    if (!Number.isInteger(n) || n < 1) throw new InvalidParamsError(`n must be a positive integer, got ${n}`);
    const at = (options.now ?? new Date()).toISOString();
    return this.tx(() => {
      this.requireSession(sessionId);
      const users = messages.lastUserMessages(this.db, sessionId, n);
      const target = users[users.length - 1];
      if (target === undefined) return { rewound_count: 0, turns_undone: 0, target_text: null };
      const rewindId = messages.insertRewindAudit(this.db, {
        sessionId,
        at,
        turnsRequested: n,
        turnsUndone: users.length,
        firstMessageId: target.id,
        targetText: target.content,
      });
      const count = messages.rewindFrom(this.db, sessionId, target.id, rewindId, at);
      return { rewound_count: count, turns_undone: users.length, target_text: target.content };
    });
  }

  async searchMessages(query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
    if (query.trim() === '') throw new InvalidParamsError('search query is empty');
    const limit = options.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
      throw new InvalidParamsError(`limit must be an integer from 1 to 500, got ${String(limit)}`);
    }
    if (search.isIndexStale(this.db)) await this.rebuildSearchIndex();
    return search.searchIndex(this.db, query, { sessionId: options.sessionId ?? null, limit });
  }

  async rebuildSearchIndex(): Promise<void> {
    this.tx(() => search.rebuildIndex(this.db));
  }

  async searchIndexStatus(): Promise<SearchIndexStatus> {
    return { stale: search.isIndexStale(this.db) };
  }

  async addUsage(sessionKey: string, usage: UsageUpdate): Promise<SessionEntry | null> {
    return this.modify(sessionKey, (e) => ({
      ...e,
      input_tokens: e.input_tokens + (usage.input_tokens ?? 0),
      output_tokens: e.output_tokens + (usage.output_tokens ?? 0),
      cache_read_tokens: e.cache_read_tokens + (usage.cache_read_tokens ?? 0),
      cache_write_tokens: e.cache_write_tokens + (usage.cache_write_tokens ?? 0),
      total_tokens: e.total_tokens + (usage.total_tokens ?? 0),
      last_prompt_tokens: usage.last_prompt_tokens ?? e.last_prompt_tokens,
      estimated_cost_usd: e.estimated_cost_usd + (usage.cost_usd ?? 0),
      cost_status: usage.cost_status ?? e.cost_status,
    }));
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  /** Read, change and write one entry in a transaction; null when the key has no entry. */
  private modify(sessionKey: string, change: (entry: SessionEntry) => SessionEntry): SessionEntry | null {
    return this.tx(() => {
      const entry = routes.readRoute(this.db, sessionKey);
      if (entry === null) return null;
      const next = change(entry);
      routes.writeRoute(this.db, next);
      return next;
    });
  }

  private requireSession(sessionId: string): void {
    if (sessions.readSession(this.db, sessionId) === null) {
      throw new NotFoundError(`no stored session ${JSON.stringify(sessionId)}`);
    }
  }
}

const ZERO_COUNTERS = {
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  total_tokens: 0,
  last_prompt_tokens: 0,
  estimated_cost_usd: 0,
} as const;

const CLEAR_FLAGS = {
  was_auto_reset: false,
  auto_reset_reason: null,
  reset_had_activity: false,
  is_fresh_reset: false,
  suspended: false,
  resume_pending: false,
  resume_reason: null,
} as const;

function requireKey(sessionKey: string): void {
  if (typeof sessionKey !== 'string' || sessionKey === '') throw new InvalidParamsError('session key is empty');
}

function validateMessages(list: readonly TranscriptMessage[]): readonly TranscriptMessage[] {
  for (const m of list) {
    if (!MESSAGE_ROLES.has(m.role)) throw new InvalidParamsError(`unknown message role ${JSON.stringify(m.role)}`);
    if (m.content !== null && typeof m.content !== 'string') {
      throw new InvalidParamsError('message content must be a string or null');
    }
  }
  return list;
}
