/**
 * The behaviour every SessionStore backend must show (STO-2, ENT-2). A backend's test file calls
 * runSessionStoreSuite with a factory; SQLite and PostgreSQL run the same cases.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionSourceFields, TranscriptMessage } from '../../src/domain/vocabulary.js';
import { assistant, at, source, user, type StoreHarness } from './fixtures.js';
import { InvalidParamsError, NotFoundError } from '../../src/domain/errors.js';
import { isSessionId } from '../../src/domain/session/lifecycle.js';
import type { SessionStore } from '../../src/domain/ports/session-store.js';

export { source, type StoreHarness } from './fixtures.js';

const KEY = 'agent:main:telegram:dm:1001';

export function runSessionStoreSuite(
  name: string,
  makeStore: () => StoreHarness | Promise<StoreHarness>,
): void {
  describe(`${name}: SessionStore behaviour`, () => {
    let h: StoreHarness;
    let store: SessionStore;
    beforeEach(async () => {
      h = await makeStore();
      store = h.store;
    });
    afterEach(async () => {
      await h.cleanup();
    });

    describe('ENT-2 get_or_create_session decision order', () => {
      it('creates an entry with a YYYYMMDD_HHMMSS_<8hex> id when the key has none', async () => {
        const access = await store.getOrCreateSession(KEY, source(), { now: at('2026-03-04T05:06:07Z') });
        expect(access.kind).toBe('created');
        expect(access.entry.session_id).toMatch(/^20260304_050607_[0-9a-f]{8}$/);
        expect(access.entry).toMatchObject({ session_key: KEY, display_name: 'Alice', platform: 'telegram' });
        expect(access.entry.origin).toEqual(source());
      });

      it('force_new replaces the entry and closes the old session, keeping its transcript', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        await store.appendToTranscript(first.entry.session_id, user('hello'));
        const second = await store.getOrCreateSession(KEY, source(), { forceNew: true });
        expect(second.kind).toBe('created');
        expect(second.closedSessionId).toBe(first.entry.session_id);
        expect(second.entry.session_id).not.toBe(first.entry.session_id);
        expect(await store.loadTranscript(first.entry.session_id)).toHaveLength(1);
        expect(await store.loadTranscript(second.entry.session_id)).toEqual([]);
      });

      it('touches an existing entry: same id, updated_at bumped, even after years of silence', async () => {
        const first = await store.getOrCreateSession(KEY, source(), { now: at('2001-01-01T00:00:00Z') });
        const later = await store.getOrCreateSession(KEY, source(), { now: at('2026-06-01T00:00:00Z') });
        expect(later.kind).toBe('touched');
        expect(later.entry.session_id).toBe(first.entry.session_id);
        expect(later.entry.updated_at).toBe('2026-06-01T00:00:00.000Z');
        expect(later.entry.was_auto_reset).toBe(false);
      });

      it('suspended: a new session_id, reason "suspended", hard wipe, activity recorded', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        await store.appendToTranscript(first.entry.session_id, [user('hi'), assistant('hello')]);
        expect(await store.suspendSession(KEY)).toBe(true);
        const next = await store.getOrCreateSession(KEY, source());
        expect(next.kind).toBe('replaced');
        expect(next.entry.session_id).not.toBe(first.entry.session_id);
        expect(next.entry).toMatchObject({
          was_auto_reset: true,
          auto_reset_reason: 'suspended',
          reset_had_activity: true,
          suspended: false,
          resume_pending: false,
        });
        expect(await store.loadTranscript(next.entry.session_id)).toEqual([]);
        expect(await store.loadTranscript(first.entry.session_id)).toHaveLength(2);
      });

      it('suspended beats resume_pending', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        expect(await store.markResumePending(KEY, 'restart_timeout')).toBe(true);
        await store.suspendSession(KEY);
        const next = await store.getOrCreateSession(KEY, source());
        expect(next.kind).toBe('replaced');
        expect(next.entry.session_id).not.toBe(first.entry.session_id);
        expect(next.entry.resume_pending).toBe(false);
      });

      it('resume_pending keeps id and transcript until a completed turn clears it', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        await store.appendToTranscript(first.entry.session_id, user('half-done work'));
        await store.markResumePending(KEY, 'shutdown_timeout', { now: at('2026-01-01T00:00:00Z') });
        for (let i = 0; i < 2; i++) {
          // The resumed turn may be interrupted again: the mark must survive repeated accesses.
          const again = await store.getOrCreateSession(KEY, source());
          expect(again.kind).toBe('resumed');
          expect(again.entry.session_id).toBe(first.entry.session_id);
          expect(again.entry).toMatchObject({
            resume_pending: true,
            resume_reason: 'shutdown_timeout',
            last_resume_marked_at: '2026-01-01T00:00:00.000Z',
          });
          expect(await store.loadTranscript(first.entry.session_id)).toHaveLength(1);
        }
        expect(await store.clearResumePending(KEY)).toBe(true);
        const after = await store.getOrCreateSession(KEY, source());
        expect(after.kind).toBe('touched');
        expect(after.entry).toMatchObject({ session_id: first.entry.session_id, resume_pending: false });
        expect(await store.clearResumePending(KEY)).toBe(false);
      });

      it('refuses an empty key or unknown chat_type and writes nothing', async () => {
        await expect(store.getOrCreateSession('', source())).rejects.toBeInstanceOf(InvalidParamsError);
        const bad = { ...source(), chat_type: 'forum' } as unknown as SessionSourceFields;
        await expect(store.getOrCreateSession(KEY, bad)).rejects.toBeInstanceOf(InvalidParamsError);
        expect(await store.hasAnySessions()).toBe(false);
      });
    });

    describe('STO-2 entry operations', () => {
      it('update_session bumps updated_at and records last_prompt_tokens', async () => {
        await store.getOrCreateSession(KEY, source(), { now: at('2026-01-01T00:00:00Z') });
        const e = await store.updateSession(KEY, { lastPromptTokens: 1234, now: at('2026-01-02T00:00:00Z') });
        expect(e).toMatchObject({ updated_at: '2026-01-02T00:00:00.000Z', last_prompt_tokens: 1234 });
        expect(await store.updateSession('agent:main:none:dm')).toBeNull();
      });

      it('reset_session: new id, is_fresh_reset, counters zeroed, old transcript kept', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        await store.appendToTranscript(first.entry.session_id, user('old'));
        await store.addUsage(KEY, { input_tokens: 10, total_tokens: 10 });
        const reset = await store.resetSession(KEY, { displayName: 'Renamed' });
        expect(reset).not.toBeNull();
        expect(reset!.session_id).not.toBe(first.entry.session_id);
        expect(reset).toMatchObject({ is_fresh_reset: true, was_auto_reset: false, total_tokens: 0 });
        expect(reset!.display_name).toBe('Renamed');
        expect(await store.loadTranscript(reset!.session_id)).toEqual([]);
        expect(await store.loadTranscript(first.entry.session_id)).toHaveLength(1);
        expect(await store.lookupBySessionId(first.entry.session_id)).toBeNull();
        expect(await store.resetSession('agent:main:none:dm')).toBeNull();
      });

      it('switch_session points the key at an earlier session', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        const reset = await store.resetSession(KEY);
        const switched = await store.switchSession(KEY, first.entry.session_id, {
          expectedSessionId: reset!.session_id,
        });
        expect(switched!.session_id).toBe(first.entry.session_id);
        expect((await store.lookupBySessionId(first.entry.session_id))!.session_key).toBe(KEY);
        expect(await store.lookupBySessionId(reset!.session_id)).toBeNull();
      });

      it('switch_session compare-and-swap loses to a concurrent /new and changes nothing', async () => {
        const first = await store.getOrCreateSession(KEY, source());
        const older = await store.resetSession(KEY); // a session to resume into
        const seen = (await store.getOrCreateSession(KEY, source())).entry.session_id;
        const [fresh, switched] = await Promise.all([
          store.resetSession(KEY), // the concurrent /new lands first
          store.switchSession(KEY, first.entry.session_id, { expectedSessionId: seen }),
        ]);
        expect(switched).toBeNull();
        const now = await store.getOrCreateSession(KEY, source());
        expect(now.entry.session_id).toBe(fresh!.session_id);
        expect(older!.session_id).toBe(seen);
      });

      it('switch_session to an unknown session is not_found; an unknown key is null', async () => {
        await store.getOrCreateSession(KEY, source());
        await expect(store.switchSession(KEY, '20260101_000000_deadbeef')).rejects.toBeInstanceOf(
          NotFoundError,
        );
        expect(await store.switchSession('agent:main:none:dm', '20260101_000000_deadbeef')).toBeNull();
      });

      it('switch_session with same_key refuses a session of another key as not_found', async () => {
        const mine = await store.getOrCreateSession(KEY, source());
        await store.resetSession(KEY);
        const theirs = await store.getOrCreateSession('agent:main:telegram:dm:2002', source());
        await expect(
          store.switchSession(KEY, theirs.entry.session_id, { sameKey: true }),
        ).rejects.toBeInstanceOf(NotFoundError);
        const back = await store.switchSession(KEY, mine.entry.session_id, { sameKey: true });
        expect(back!.session_id).toBe(mine.entry.session_id);
        expect((await store.lookupBySessionId(theirs.entry.session_id))!.session_key).toBe(
          'agent:main:telegram:dm:2002',
        );
      });

      it('mark_resume_pending never overrides suspended', async () => {
        await store.getOrCreateSession(KEY, source());
        await store.suspendSession(KEY);
        expect(await store.markResumePending(KEY, 'restart_timeout')).toBe(false);
        const page = await store.listSessions();
        expect(page.entries[0]).toMatchObject({
          suspended: true,
          resume_pending: false,
          resume_reason: null,
        });
        expect(await store.markResumePending('agent:main:none:dm', 'restart_timeout')).toBe(false);
        expect(await store.suspendSession('agent:main:none:dm')).toBe(false);
      });

      it('recover_interrupted_turns resumes marked, recent, unsuspended turns only, once', async () => {
        const now = at('2026-05-01T12:00:00Z');
        const keys = ['k:recent', 'k:old', 'k:suspended', 'k:finished'];
        for (const k of keys) await store.getOrCreateSession(k, source());
        await store.markTurnStarted('k:recent', { now: at('2026-05-01T11:59:00Z') });
        await store.markTurnStarted('k:old', { now: at('2026-05-01T10:00:00Z') });
        await store.markTurnStarted('k:suspended', { now: at('2026-05-01T11:59:00Z') });
        await store.suspendSession('k:suspended');
        await store.markTurnStarted('k:finished', { now: at('2026-05-01T11:59:00Z') });
        await store.clearTurnMarker('k:finished');
        expect(await store.recoverInterruptedTurns({ maxAgeSeconds: 3600, now })).toEqual(['k:recent']);
        const recent = (await store.listSessions()).entries.find((e) => e.session_key === 'k:recent');
        expect(recent).toMatchObject({ resume_pending: true, resume_reason: 'restart_interrupted' });
        expect(await store.recoverInterruptedTurns({ maxAgeSeconds: 3600, now })).toEqual([]);
        await expect(store.markTurnStarted('k:none')).rejects.toBeInstanceOf(NotFoundError);
      });

      it('prune_old_entries skips suspended entries and keys with live processes', async () => {
        const old = at('2026-01-01T00:00:00Z');
        const now = at('2026-03-01T00:00:00Z');
        const a = await store.getOrCreateSession('k:old', source(), { now: old });
        await store.appendToTranscript(a.entry.session_id, user('keep me'));
        await store.getOrCreateSession('k:suspended', source(), { now: old });
        await store.suspendSession('k:suspended');
        await store.getOrCreateSession('k:live', source(), { now: old });
        await store.getOrCreateSession('k:recent', source(), { now });
        expect(await store.pruneOldEntries({ maxAgeDays: 0, now })).toEqual([]);
        const removed = await store.pruneOldEntries({
          maxAgeDays: 30,
          now,
          liveSessionKeys: new Set(['k:live']),
        });
        expect(removed).toEqual(['k:old']);
        const left = (await store.listSessions()).entries.map((e) => e.session_key).sort();
        expect(left).toEqual(['k:live', 'k:recent', 'k:suspended']);
        expect(await store.loadTranscript(a.entry.session_id)).toHaveLength(1);
      });

      it('list_sessions: updated_at descending, activity window, pages by cursor', async () => {
        for (let i = 0; i < 7; i++) {
          await store.getOrCreateSession(`k:${i}`, source(), { now: at(`2026-01-0${i + 1}T00:00:00Z`) });
        }
        const all = await store.listSessions();
        expect(all.entries.map((e) => e.session_key)).toEqual([
          'k:6',
          'k:5',
          'k:4',
          'k:3',
          'k:2',
          'k:1',
          'k:0',
        ]);
        expect(all.nextCursor).toBeNull();
        const recent = await store.listSessions({
          activeMinutes: 2 * 24 * 60,
          now: at('2026-01-07T12:00:00Z'),
        });
        expect(recent.entries.map((e) => e.session_key)).toEqual(['k:6', 'k:5']);
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page = await store.listSessions({ limit: 3, cursor });
          seen.push(...page.entries.map((e) => e.session_key));
          cursor = page.nextCursor;
        } while (cursor !== null);
        expect(seen).toEqual(all.entries.map((e) => e.session_key));
        await expect(store.listSessions({ cursor: 'garbage' })).rejects.toBeInstanceOf(InvalidParamsError);
        await expect(store.listSessions({ limit: 0 })).rejects.toBeInstanceOf(InvalidParamsError);
      });

      it('lookup_by_session_id and has_any_sessions (history counts too)', async () => {
        expect(await store.hasAnySessions()).toBe(false);
        const a = await store.getOrCreateSession(KEY, source(), { now: at('2020-01-01T00:00:00Z') });
        expect((await store.lookupBySessionId(a.entry.session_id))!.session_key).toBe(KEY);
        expect(await store.lookupBySessionId('20200101_000000_00000000')).toBeNull();
        await store.pruneOldEntries({ maxAgeDays: 1, now: at('2026-01-01T00:00:00Z') });
        expect((await store.listSessions()).entries).toEqual([]);
        expect(await store.hasAnySessions()).toBe(true);
      });

      it('add_usage accumulates token counters and cost', async () => {
        await store.getOrCreateSession(KEY, source());
        await store.addUsage(KEY, {
          input_tokens: 100,
          output_tokens: 20,
          total_tokens: 120,
          cost_usd: 0.5,
          cost_status: 'reported',
        });
        // A route with no usage yet took the first turn's status; now the less certain one wins.
        expect((await store.addUsage(KEY, {}))?.cost_status).toBe('reported');
        const e = await store.addUsage(KEY, {
          input_tokens: 1,
          cache_read_tokens: 7,
          cache_write_tokens: 3,
          total_tokens: 1,
          last_prompt_tokens: 99,
          cost_usd: 0.25,
          cost_status: 'estimated',
        });
        expect(e).toMatchObject({
          input_tokens: 101,
          output_tokens: 20,
          cache_read_tokens: 7,
          cache_write_tokens: 3,
          total_tokens: 121,
          last_prompt_tokens: 99,
          estimated_cost_usd: 0.75,
          cost_status: 'estimated',
        });
        // A call with no price makes the total a lower bound: unknown, and it stays so.
        await store.addUsage(KEY, { input_tokens: 5, total_tokens: 5, cost_usd: 0, cost_status: 'unknown' });
        expect(await store.addUsage(KEY, { cost_usd: 1, cost_status: 'reported' })).toMatchObject({
          estimated_cost_usd: 1.75,
          cost_status: 'unknown',
        });
        expect(await store.addUsage('agent:main:none:dm', { input_tokens: 1 })).toBeNull();
      });
    });

    describe('STO-2 transcripts', () => {
      let sid: string;
      beforeEach(async () => {
        sid = (await store.getOrCreateSession(KEY, source())).entry.session_id;
      });

      it('append and load round-trip every message field, in order', async () => {
        const msgs: TranscriptMessage[] = [
          { role: 'system', content: 'be brief' },
          { role: 'user', content: 'list files', sender_name: 'Alice', admission_id: 'adm-1' },
          {
            role: 'assistant',
            content: null,
            reasoning: 'use the terminal',
            tool_calls: [
              { id: 'c1', type: 'function', function: { name: 'terminal', arguments: '{"cmd":"ls"}' } },
            ],
          },
          { role: 'tool', content: 'a.txt', tool_call_id: 'c1', name: 'terminal' },
          { role: 'assistant', content: 'one file', timestamp: '2026-01-01T00:00:00.000Z' },
        ];
        const stored = await store.appendToTranscript(sid, msgs, { now: at('2026-02-02T00:00:00Z') });
        const loaded = await store.loadTranscript(sid);
        expect(loaded).toEqual(stored);
        expect(loaded.map(({ id: _i, session_id: _s, timestamp: _t, ...m }) => m)).toEqual(
          msgs.map(({ timestamp: _t, ...m }) => m),
        );
        expect(loaded[0]!.timestamp).toBe('2026-02-02T00:00:00.000Z');
        expect(loaded[4]!.timestamp).toBe('2026-01-01T00:00:00.000Z');
      });

      it('skip_db writes nothing (the message was already persisted elsewhere)', async () => {
        expect(await store.appendToTranscript(sid, user('dup'), { skipDb: true })).toEqual([]);
        expect(await store.loadTranscript(sid)).toEqual([]);
      });

      it('bad messages and unknown sessions are refused, nothing written', async () => {
        const bad = { role: 'wizard', content: 'x' } as unknown as TranscriptMessage;
        await expect(store.appendToTranscript(sid, [user('ok'), bad])).rejects.toBeInstanceOf(
          InvalidParamsError,
        );
        await expect(store.appendToTranscript('20200101_000000_00000000', user('x'))).rejects.toBeInstanceOf(
          NotFoundError,
        );
        expect(await store.loadTranscript(sid)).toEqual([]);
      });

      it('rewrite_transcript replaces what load returns', async () => {
        await store.appendToTranscript(sid, [user('a'), assistant('b'), user('c')]);
        await store.rewriteTranscript(sid, [{ role: 'system', content: 'summary of a, b, c' }]);
        expect((await store.loadTranscript(sid)).map((m) => m.content)).toEqual(['summary of a, b, c']);
      });

      it('load_transcript_tail: what was appended after an id, and whether the copy still holds', async () => {
        const first = await store.appendToTranscript(sid, [user('u1'), assistant('a1')]);
        const empty = await store.loadTranscriptTail(sid, 0);
        expect(empty.anchored).toBe(true);
        expect(empty.messages).toEqual(first);
        const last = first[1]!.id;
        expect((await store.loadTranscriptTail(sid, last)).messages).toEqual([]);
        const more = await store.appendToTranscript(sid, [user('u2')]);
        const tail = await store.loadTranscriptTail(sid, last);
        expect(tail).toEqual({ edits: empty.edits, anchored: true, messages: more });
        // A rewind removes the copy's last message: no longer anchored, and counted as an edit.
        await store.rewindSession(sid, 2);
        const after = await store.loadTranscriptTail(sid, last);
        expect(after.anchored).toBe(false);
        expect(after.edits).toBeGreaterThan(empty.edits);
        // A rewrite counts too, even when the copy's last id is still visible under its own number.
        const kept = await store.appendToTranscript(sid, [user('again')]);
        const before = await store.loadTranscriptTail(sid, kept[0]!.id);
        await store.rewriteTranscript(sid, [user('summary')]);
        expect((await store.loadTranscriptTail(sid, kept[0]!.id)).edits).toBeGreaterThan(before.edits);
        await expect(store.loadTranscriptTail('20200101_000000_00000000', 0)).rejects.toBeInstanceOf(
          NotFoundError,
        );
      });

      it('load_transcript_page walks the visible transcript back from the newest page', async () => {
        await store.appendToTranscript(sid, [
          user('a'),
          assistant('b'),
          user('c'),
          assistant('d'),
          user('e'),
        ]);
        await store.rewindSession(sid, 1); // 'e' is no longer visible
        const newest = await store.loadTranscriptPage(sid, { limit: 2 });
        expect(newest.messages.map((m) => m.content)).toEqual(['c', 'd']);
        expect(newest.hasMore).toBe(true);
        const older = await store.loadTranscriptPage(sid, { beforeId: newest.messages[0]!.id, limit: 2 });
        expect([older.messages.map((m) => m.content), older.hasMore]).toEqual([['a', 'b'], false]);
        await expect(store.loadTranscriptPage(sid, { limit: 0 })).rejects.toBeInstanceOf(InvalidParamsError);
      });

      it('rewind_session soft-deletes the last n user turns and reports them', async () => {
        await store.appendToTranscript(sid, [
          user('u1'),
          assistant('a1'),
          user('u2'),
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 't', type: 'function', function: { name: 'x', arguments: '{}' } }],
          },
          { role: 'tool', content: 'r', tool_call_id: 't' },
          assistant('a2'),
          user('u3'),
          assistant('a3'),
        ]);
        expect(await store.rewindSession(sid, 2)).toEqual({
          rewound_count: 6,
          turns_undone: 2,
          target_text: 'u2',
        });
        expect((await store.loadTranscript(sid)).map((m) => m.content)).toEqual(['u1', 'a1']);
        expect(await store.rewindSession(sid, 5)).toEqual({
          rewound_count: 2,
          turns_undone: 1,
          target_text: 'u1',
        });
        expect(await store.rewindSession(sid)).toEqual({
          rewound_count: 0,
          turns_undone: 0,
          target_text: null,
        });
        await expect(store.rewindSession(sid, 0)).rejects.toBeInstanceOf(InvalidParamsError);
      });

      it('search finds visible messages, newest first, and skips rewound ones', async () => {
        const other = (await store.getOrCreateSession('k:other', source())).entry.session_id;
        await store.appendToTranscript(sid, [user('the zebra crossing'), assistant('zebra stripes')]);
        await store.appendToTranscript(other, user('a zebra elsewhere'));
        const hits = await store.searchMessages('zebra');
        expect(hits.map((h) => h.snippet)).toEqual([
          'a [zebra] elsewhere',
          '[zebra] stripes',
          'the [zebra] crossing',
        ]);
        expect((await store.searchMessages('zebra', { sessionId: sid })).map((h) => h.session_id)).toEqual([
          sid,
          sid,
        ]);
        await store.rewindSession(sid, 1);
        expect(await store.searchMessages('zebra', { sessionId: sid })).toEqual([]);
        await expect(store.searchMessages('"unterminated', { syntax: 'fts' })).rejects.toBeInstanceOf(
          InvalidParamsError,
        );
        await expect(store.searchMessages('  ')).rejects.toBeInstanceOf(InvalidParamsError);
      });

      it('issue 12 item 9: plain text is words, whatever characters it holds; every word must appear', async () => {
        await store.appendToTranscript(sid, [
          user('please run rm -rf /tmp/x or else, for me'),
          assistant('what colour? see README.md'),
          user('colour blind'),
        ]);
        const found = async (query: string) => (await store.searchMessages(query)).map((h) => h.message_id);
        const [first, second] = [(await found('please'))[0], (await found('README'))[0]];
        for (const query of ['rm -rf', '/tmp/x', 'rm  -rf\t/tmp/x', '"unterminated please', 'please OR me']) {
          expect(await found(query), query).toEqual(query.includes('unterminated') ? [] : [first]);
        }
        expect(await found('what colour?')).toEqual([second]);
        expect(await found('README.md')).toEqual([second]);
        expect(await found('NOT colour')).toEqual([]); // NOT is a word here, and no message has it
        expect((await found('colour')).length).toBe(2);
        // Terms without a letter or digit hold nothing to look for: no hits, no error.
        expect(await found('*')).toEqual([]);
        expect(await found('-- *')).toEqual([]);
        expect(await found('colour *')).toHaveLength(2);
      });

      it('issue 12 item 9: syntax fts passes the query language through; refusals are invalid_params', async () => {
        await store.appendToTranscript(sid, [user('alpha beta'), user('alphabet soup')]);
        expect(await store.searchMessages('alpha*', { syntax: 'fts' })).toHaveLength(2);
        expect(await store.searchMessages('alpha NOT beta', { syntax: 'fts' })).toHaveLength(0);
        expect(await store.searchMessages('"alpha beta"', { syntax: 'fts' })).toHaveLength(1);
        for (const bad of ['*', 'rm -rf', 'what colour?', 'a AND', '"open']) {
          await expect(store.searchMessages(bad, { syntax: 'fts' }), bad).rejects.toBeInstanceOf(
            InvalidParamsError,
          );
        }
        // FTS5 reads `-rf` and `rf:` as column filters: every backend names the unknown column.
        for (const bad of ['rm -rf', 'rm - rf', 'rf:x', 'rm -"rf"']) {
          await expect(store.searchMessages(bad, { syntax: 'fts' }), bad).rejects.toThrow(
            '(no such column: rf)',
          );
        }
      });
    });

    describe('LIN-1 publishCompression, parentOf and the compression backoff', () => {
      it('moves the route to a child linked to its parent; the parent stays searchable; a second publish from the old parent changes nothing', async () => {
        const { entry } = await store.getOrCreateSession('k1', source());
        await store.appendToTranscript(entry.session_id, [user('the zanzibar plan'), assistant('ok')]);
        const publication = {
          sessionKey: 'k1',
          parentSessionId: entry.session_id,
          childSessionId: 'child-1',
          messages: [user('[Context summary] short')],
          backoffSubject: 'k1',
        };
        expect(await store.publishCompression(publication)).toBe(true);
        expect((await store.lookupBySessionId('child-1'))?.session_key).toBe('k1');
        expect(await store.parentOf('child-1')).toBe(entry.session_id);
        expect(await store.parentOf(entry.session_id)).toBeNull();
        expect((await store.loadTranscript('child-1')).map((m) => m.content)).toEqual([
          '[Context summary] short',
        ]);
        expect((await store.searchMessages('zanzibar')).map((h) => h.session_id)).toEqual([entry.session_id]);
        // The route no longer points at the parent: nothing is written, not even the child row.
        expect(await store.publishCompression({ ...publication, childSessionId: 'child-2' })).toBe(false);
        expect(await store.loadTranscript('child-2')).toEqual([]);
        expect(await store.parentOf('child-2')).toBeNull();
      });

      it("keeps a compression's record on its child row (issue 26 item 1)", async () => {
        const { entry } = await store.getOrCreateSession('k1s', source());
        await store.appendToTranscript(entry.session_id, [user('one'), assistant('two')]);
        const step = {
          method: 'dropped' as const,
          dropped: 2,
          summary_error: 'the summary call answered with no text',
        };
        expect(
          await store.publishCompression({
            sessionKey: 'k1s',
            parentSessionId: entry.session_id,
            childSessionId: 'child-s1',
            messages: [user('[Context summary] dropped')],
            backoffSubject: null,
            step,
          }),
        ).toBe(true);
        expect(await store.compressionStepOf('child-s1')).toEqual(step);
        expect(await store.compressionStepOf(entry.session_id)).toBeNull();
        expect(await store.compressionStepOf('no-such-session')).toBeNull();
      });

      it('keeps a failed compression backoff across a reopen and clears it with the next success', async () => {
        const { entry } = await store.getOrCreateSession('k2', source());
        const backoff = {
          failures: 2,
          retryAfter: '2030-01-01T00:00:00.000Z',
          lastError: 'the summary call failed',
        };
        expect(await store.compressionBackoff('k2')).toBeNull();
        await store.recordCompressionFailure('k2', backoff);
        await store.recordCompressionFailure('k2', { ...backoff, failures: 3 });
        store = await h.reopen();
        expect(await store.compressionBackoff('k2')).toEqual({ ...backoff, failures: 3 });
        await store.publishCompression({
          sessionKey: 'k2',
          parentSessionId: entry.session_id,
          childSessionId: 'child-3',
          messages: [],
          backoffSubject: 'k2',
        });
        expect(await store.compressionBackoff('k2')).toBeNull();
      });
    });

    it('STO-4 rebuildSearchIndex keeps every message findable; searchIndexStatus reports a usable index', async () => {
      const { entry } = await store.getOrCreateSession(KEY, source());
      await store.appendToTranscript(entry.session_id, [user('first kiwi'), assistant('second kiwi')]);
      expect(await store.searchIndexStatus()).toEqual({ stale: false });
      await store.rebuildSearchIndex();
      await store.appendToTranscript(entry.session_id, user('third kiwi'));
      expect((await store.searchMessages('kiwi')).map((h) => h.snippet)).toEqual([
        'third [kiwi]',
        'second [kiwi]',
        'first [kiwi]',
      ]);
      expect(await store.searchIndexStatus()).toEqual({ stale: false });
    });

    it('everything persists across a reopen', async () => {
      const a = await store.getOrCreateSession(KEY, source());
      await store.appendToTranscript(a.entry.session_id, [user('persist me'), assistant('ok')]);
      await store.addUsage(KEY, { total_tokens: 5 });
      await store.markResumePending(KEY, 'restart_timeout');
      await store.markTurnStarted(KEY);
      store = await h.reopen();
      expect(isSessionId(a.entry.session_id)).toBe(true);
      const again = await store.getOrCreateSession(KEY, source());
      expect(again.kind).toBe('resumed');
      expect(again.entry).toMatchObject({ session_id: a.entry.session_id, total_tokens: 5 });
      expect((await store.loadTranscript(a.entry.session_id)).map((m) => m.content)).toEqual([
        'persist me',
        'ok',
      ]);
      expect((await store.searchMessages('persist')).length).toBe(1);
      expect(await store.recoverInterruptedTurns({ maxAgeSeconds: 3600 })).toEqual([KEY]);
    });
  });
}
