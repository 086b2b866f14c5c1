/**
 * The LocalSessionStore contract as one suite that every backend runs (SQLite and PostgreSQL): the
 * turn path (admit, claim, settle), REC-3 fencing, REC-7 step records and orphan takeover, LIN-2/3
 * resets and their validation, STO-2 rewind and retry, and the creation and lookup operations. A
 * backend passes a function that opens a fresh database with one epoch opened and a local session
 * created for each id given.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ReceiptGate } from '../../src/domain/local/receipt-gate.js';
import { localSessionKey, receiptKey, type CreationReceipt } from '../../src/domain/local/receipt.js';
import { SessionSource } from '../../src/domain/session/source.js';
import type { AuditEntry } from '../../src/domain/ports/access-store.js';
import type { LocalSessionStore, StoreFaults } from '../../src/domain/ports/local-store.js';
import type { SessionStore } from '../../src/domain/ports/session-store.js';
import { OWNER, testAdmission, testReceipt } from './local-fixtures.js';

export interface LocalStoreBackend {
  store: LocalSessionStore;
  /** The session store on the same database (transcripts and routes). */
  sessions: SessionStore;
  epoch: number;
  /** Rows of a statement run on the database, with `?` placeholders (tests that plant or inspect rows). */
  sql: <T>(text: string, params?: readonly unknown[]) => Promise<T[]>;
  /** Another store on the same database whose transactions call `faults` (a crash mid-transaction). */
  withFaults: (faults: StoreFaults) => LocalSessionStore;
  /** Group commits made so far on this database. */
  batches: () => number;
  cleanup(): Promise<void>;
}

export type OpenLocalBackend = (logicalIds: readonly string[]) => Promise<LocalStoreBackend>;

const AT = '2026-12-01T10:00:00.000Z';

const origin = (id: string) => new SessionSource({ platform: 'local', chat_id: id }).toJSON();

function gate(store: LocalSessionStore) {
  const paused: string[] = [];
  return {
    gate: new ReceiptGate(store, 'default', { paused: (id, f, d) => paused.push(`${id} ${f}: ${d}`) }),
    paused,
  };
}

function reset(store: LocalSessionStore, from: string, to: string, request_id = 'r1') {
  return store.commitReset({
    logical_id: 'A',
    expected_session_id: from,
    new_session_id: to,
    request_id,
    at: AT,
  });
}

/** The settlement of `admission_id` with one final answer and its token count. */
function answer(admission_id: string, epoch: number, generation: number, content: string, tokens: number) {
  return {
    admission_id,
    epoch,
    generation,
    outcome: 'completed' as const,
    detail: null,
    messages: [{ role: 'assistant' as const, content, admission_id }],
    usage: { input_tokens: tokens - 3, output_tokens: 3, total_tokens: tokens },
  };
}

const settled = (admission_id: string, epoch: number, generation: number) => ({
  admission_id,
  epoch,
  generation,
  outcome: 'completed' as const,
  detail: null,
});

export function runLocalStoreSuite(name: string, open: OpenLocalBackend): void {
  let backend: LocalStoreBackend | undefined;
  afterEach(async () => {
    await backend?.cleanup();
    backend = undefined;
  });
  const start = async (ids: readonly string[]) => (backend = await open(ids));

  describe(`the turn path of the ${name} local store`, () => {
    const transcript = async () =>
      (await backend!.sessions.loadTranscript('L1')).map((m) => [m.role, m.content, m.admission_id ?? null]);
    const usage = async () => (await backend!.sessions.lookupBySessionId('L1'))?.total_tokens;
    const admission = (id: string) => testAdmission('L1', id, `text of ${id}`);

    it('admits once per submission: a repeat is existing, other text a conflict, no session unknown', async () => {
      const { store } = await start(['L1']);
      const first = await store.admit(admission('a1'));
      expect(first).toMatchObject({ kind: 'admitted', admission: { admission_id: 'a1', state: 'queued' } });
      const repeat = await store.admit({ ...admission('a1'), admission_id: 'other-id' });
      expect(repeat).toMatchObject({ kind: 'existing', admission: { admission_id: 'a1' } });
      const changed = await store.admit({ ...admission('a1'), admission_id: 'x', digest: 'different' });
      expect(changed).toMatchObject({ kind: 'conflict', admission: { admission_id: 'a1' } });
      expect(await store.admit(testAdmission('no-such-session', 'a9'))).toEqual({ kind: 'unknown_session' });
      expect((await store.unsettled('L1')).map((a) => a.admission_id)).toEqual(['a1']);
      expect(await store.getAdmission('a1')).toEqual(first.kind === 'admitted' ? first.admission : null);
    });

    it('a new admission titles an untitled session in its own commit; a titled one or a repeat changes nothing', async () => {
      const { store } = await start(['L1']);
      const first = await store.admit({ ...admission('a1'), title: 'from the first message' });
      expect(first).toMatchObject({ kind: 'admitted', titled: true });
      expect(await store.getLocalSession('L1')).toMatchObject({ title: 'from the first message' });
      const repeat = await store.admit({ ...admission('a1'), admission_id: 'other-id', title: 'again' });
      expect(repeat).toMatchObject({ kind: 'existing' });
      const second = await store.admit({ ...admission('a2'), title: 'a later message' });
      expect(second).toMatchObject({ kind: 'admitted', titled: false });
      expect(await store.getLocalSession('L1')).toMatchObject({ title: 'from the first message' });
    });

    it('a claim stores the admission text as the user message in the same commit', async () => {
      const { store, epoch } = await start(['L1']);
      await store.admit(admission('a1'));
      expect(await transcript()).toEqual([]);
      const claim = await store.claimNext('L1', epoch);
      expect(claim).toMatchObject({
        kind: 'claimed',
        generation: 1,
        session: { logical_id: 'L1', generation: 1 },
        input: { role: 'user', content: 'text of a1', admission_id: 'a1' },
      });
      expect(await transcript()).toEqual([['user', 'text of a1', 'a1']]);
      expect(await store.getAdmission('a1')).toMatchObject({ state: 'running', epoch, generation: 1 });
      // One turn at a time: the next claim finds the session busy; an unknown session is idle.
      await store.admit(admission('a2'));
      expect(await store.claimNext('L1', epoch)).toEqual({ kind: 'busy', admission_id: 'a1' });
      expect(await store.claimNext('nobody', epoch)).toEqual({ kind: 'idle' });
    });

    it('a lazy claim (answered before its flush) writes exactly what a durable one does; the turn settles on it', async () => {
      const { store, epoch } = await start(['L1']);
      await store.admit(admission('a1'));
      // Queued in the same tick as an admission of another turn: they share a commit.
      const [claim] = await Promise.all([
        store.claimNext('L1', epoch, { lazy: true }),
        store.admit(admission('a2')),
      ]);
      expect(claim).toMatchObject({
        kind: 'claimed',
        generation: 1,
        input: { role: 'user', content: 'text of a1', admission_id: 'a1' },
      });
      expect(await store.getAdmission('a1')).toMatchObject({ state: 'running', epoch, generation: 1 });
      expect(await store.claimNext('L1', epoch, { lazy: true })).toEqual({
        kind: 'busy',
        admission_id: 'a1',
      });
      expect(await store.settle(answer('a1', epoch, 1, 'the answer', 10))).toBe(true);
      expect(await store.claimNext('L1', epoch, { lazy: true })).toMatchObject({
        kind: 'claimed',
        generation: 2,
      });
      expect(await transcript()).toEqual([
        ['user', 'text of a1', 'a1'],
        ['assistant', 'the answer', 'a1'],
        ['user', 'text of a2', 'a2'],
      ]);
    });

    it('a settlement stores the final messages and adds the usage with it', async () => {
      const { store, epoch } = await start(['L1']);
      await store.admit(admission('a1'));
      await store.claimNext('L1', epoch);
      expect(await store.settle(answer('a1', epoch, 1, 'the answer', 10))).toBe(true);
      expect(await transcript()).toEqual([
        ['user', 'text of a1', 'a1'],
        ['assistant', 'the answer', 'a1'],
      ]);
      expect(await usage()).toBe(10);
      expect(await store.getAdmission('a1')).toMatchObject({ state: 'completed' });
      expect(await store.claimNext('L1', epoch)).toEqual({ kind: 'idle' });
    });

    it('issue 28: applySteers stores queued steers in the running turn and settles them in one commit, once; stale writes nothing', async () => {
      const { store, epoch } = await start(['L1']);
      await store.admit(admission('a1'));
      await store.claimNext('L1', epoch);
      const fence = { admission_id: 'a1', epoch, generation: 1 };
      expect(await store.applySteers(fence)).toEqual([]);
      await store.admit({ ...admission('s1'), mode: 'steer' });
      await store.admit(admission('a2'));
      await store.admit({ ...admission('s2'), mode: 'steer' });
      expect(await store.getAdmission('s1')).toMatchObject({
        mode: 'steer',
        applied_to: null,
        state: 'queued',
      });
      // A stale fence: nothing applied, the steers stay queued.
      expect(await store.applySteers({ ...fence, generation: 2 })).toBeNull();
      expect((await store.unsettled('L1')).map((a) => a.admission_id)).toEqual(['a1', 's1', 'a2', 's2']);
      const applied = await store.applySteers(fence);
      expect(applied).toMatchObject([
        { role: 'user', content: 'text of s1', admission_id: 'a1', steer_id: 's1' },
        { role: 'user', content: 'text of s2', admission_id: 'a1', steer_id: 's2' },
      ]);
      expect(await store.getAdmission('s2')).toMatchObject({ state: 'completed', applied_to: 'a1' });
      expect(await store.getAdmission('a2')).toMatchObject({ mode: 'prompt', state: 'queued' });
      expect(await store.applySteers(fence)).toEqual([]);
      expect(await transcript()).toEqual([
        ['user', 'text of a1', 'a1'],
        ['user', 'text of s1', 'a1'],
        ['user', 'text of s2', 'a1'],
      ]);
      expect((await backend!.sessions.loadTranscript('L1'))[1]).toMatchObject({ steer_id: 's1' });
    });

    it('a stale settlement (REC-3) writes neither its messages nor its usage', async () => {
      const { store, epoch } = await start(['L1']);
      await store.admit(admission('a1'));
      await store.claimNext('L1', epoch);
      expect(await store.settle(answer('a1', epoch, 2, 'from a stale turn', 99))).toBe(false);
      expect(await transcript()).toEqual([['user', 'text of a1', 'a1']]);
      expect(await usage()).toBe(0);
      expect(await store.getAdmission('a1')).toMatchObject({ state: 'running' });
    });

    it('admissions, claims and settlements made in one tick share one commit', async () => {
      const { store, epoch } = await start(['L1']);
      const before = backend!.batches();
      await Promise.all([store.admit(admission('a1')), store.admit(admission('a2'))]);
      expect(backend!.batches()).toBe(before + 1);
      // A claim queued in the same tick as the admission it finds sees it: they share the transaction.
      const [, claim] = await Promise.all([store.admit(admission('a3')), store.claimNext('L1', epoch)]);
      expect(claim).toMatchObject({ kind: 'claimed', admission: { admission_id: 'a1' } });
      expect(backend!.batches()).toBe(before + 2);
    });

    it('cancels only a queued admission; sessionsWithQueued follows the queues in FIFO order', async () => {
      const { store, epoch } = await start(['L1', 'L2']);
      await store.admit(testAdmission('L2', 'b1'));
      await store.admit(admission('a1'));
      await store.admit(admission('a2'));
      expect(await store.sessionsWithQueued()).toEqual(['L2', 'L1']);
      await store.claimNext('L1', epoch);
      expect(await store.cancelQueued('a1')).toBe(false);
      expect(await store.cancelQueued('a2')).toBe(true);
      expect(await store.cancelQueued('a2')).toBe(false);
      expect(await store.getAdmission('a2')).toMatchObject({ state: 'cancelled' });
      expect(await store.sessionsWithQueued()).toEqual(['L2']);
      expect(await store.getAdmission('nothing')).toBeNull();
    });
  });

  describe(`REC-3 epoch and generation fencing on the ${name} local store`, () => {
    it('refuses a settlement from a stale epoch or generation and leaves the admission as it was', async () => {
      const { store, epoch: oldEpoch } = await start(['L1']);
      await Promise.all([store.admit(testAdmission('L1', 'a1')), store.admit(testAdmission('L1', 'a2'))]);
      expect(await store.claimNext('L1', oldEpoch)).toMatchObject({ kind: 'claimed', generation: 1 });

      // The process of oldEpoch is presumed dead: a new start opens a higher epoch and sweeps.
      const newEpoch = await store.openEpoch('second');
      expect(newEpoch).toBeGreaterThan(oldEpoch);
      expect((await store.markOrphansUnknown(newEpoch)).map((a) => a.admission_id)).toEqual(['a1']);
      expect(await store.resolveUnknown('a1', 2, 'wrong generation')).toBe(false);
      expect(await store.resolveUnknown('a1', 1, 'resolved by test')).toBe(true);
      expect(await store.claimNext('L1', newEpoch)).toMatchObject({ kind: 'claimed', generation: 2 });

      // The old process wakes up and tries to settle what it ran: refused, nothing changes.
      expect(await store.settle(settled('a1', oldEpoch, 1))).toBe(false);
      expect(await store.settle(settled('a2', oldEpoch, 2))).toBe(false);
      expect(await store.settle(settled('a2', newEpoch, 1))).toBe(false);
      expect(await store.getAdmission('a1')).toMatchObject({
        state: 'interrupted',
        detail: 'resolved by test',
      });
      expect(await store.getAdmission('a2')).toMatchObject({
        state: 'running',
        epoch: newEpoch,
        generation: 2,
      });

      // The owner of the claim settles it.
      expect(await store.settle(settled('a2', newEpoch, 2))).toBe(true);
      expect(await store.getAdmission('a2')).toMatchObject({ state: 'completed' });
    });

    it('an unknown admission blocks its queue until it is resolved', async () => {
      const { store, epoch } = await start(['L1']);
      await store.admit(testAdmission('L1', 'a1'));
      await store.admit(testAdmission('L1', 'a2'));
      await store.claimNext('L1', epoch);
      const next = await store.openEpoch('second');
      await store.markOrphansUnknown(next);
      expect(await store.claimNext('L1', next)).toEqual({ kind: 'blocked', admission_id: 'a1' });
      await store.resolveUnknown('a1', 1, 'resolved');
      expect(await store.claimNext('L1', next)).toMatchObject({
        kind: 'claimed',
        admission: { admission_id: 'a2' },
      });
    });

    it('records a clean shutdown on the epoch that stopped gracefully', async () => {
      const { store, epoch: crashed, sql } = await start([]);
      const clean = await store.openEpoch('clean');
      await store.markCleanShutdown(clean);
      const rows = await sql<{ epoch: number; clean_shutdown_at: string | null }>(
        'SELECT epoch, clean_shutdown_at FROM authority_epochs ORDER BY epoch',
      );
      // Number(): a raw BIGINT column may come back as text.
      expect(rows.map((r) => [Number(r.epoch), r.clean_shutdown_at !== null])).toEqual([
        [crashed, false],
        [clean, true],
      ]);
    });
  });

  describe(`REC-7 step records on the ${name} local store`, () => {
    it('fences every step record, clears the started mark with the result, and resumes an orphan under a new generation', async () => {
      const { store, sessions, epoch: first } = await start(['L1']);
      await store.admit(testAdmission('L1', 'a1'));
      const claim = await store.claimNext('L1', first);
      if (claim.kind !== 'claimed') throw new Error(claim.kind);
      const fence = { admission_id: 'a1', epoch: first, generation: claim.generation };
      const prompt = { prompt_id: 'prm_1', type: 'approval' as const, tool_call_id: 'c1', requested_at: 'T' };

      expect(await store.recordPrompt({ ...fence, generation: 99 }, prompt)).toBe(false);
      expect(await store.recordPrompt(fence, prompt)).toBe(true);
      expect(await store.getAdmission('a1')).toMatchObject({ prompt, tool_started: null, resumes: 0 });
      // The started mark replaces the prompt it waited on.
      expect(await store.markToolStarted(fence, 'c1')).toBe(true);
      expect(await store.getAdmission('a1')).toMatchObject({ prompt: null, tool_started: 'c1' });

      // A crash: the next start finds the orphan with its mark, and takes it over.
      const second = await store.openEpoch('second');
      expect((await store.orphans(second)).map((a) => [a.admission_id, a.tool_started])).toEqual([
        ['a1', 'c1'],
      ]);
      const resumed = await store.resumeOrphan('a1', second);
      expect(resumed).toMatchObject({
        generation: claim.generation + 1,
        admission: { resumes: 1, epoch: second },
        input: { role: 'user', content: 'a1', admission_id: 'a1' },
      });
      expect(await store.resumeOrphan('a1', second)).toBeNull();
      const now = { admission_id: 'a1', epoch: second, generation: resumed!.generation };
      // The old generation can write nothing; the new one stores the result and clears the mark.
      const result = { role: 'tool' as const, tool_call_id: 'c1', content: 'closed', admission_id: 'a1' };
      expect(await store.recordToolResult(fence, [result])).toBe(false);
      expect(await store.recordToolResult(now, [result])).toBe(true);
      expect(await store.getAdmission('a1')).toMatchObject({ tool_started: null, state: 'running' });
      const stored = await sessions.loadTranscript(testReceipt('L1').current_session_id);
      expect(stored.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual(['closed']);

      // An orphan recovery does not resume becomes unknown with its reason.
      const third = await store.openEpoch('third');
      expect(await store.markUnknown('a1', third, 'stale: old')).toBe(true);
      expect(await store.getAdmission('a1')).toMatchObject({ state: 'unknown', detail: 'stale: old' });
      expect(await store.orphans(third)).toEqual([]);
    });
  });

  describe(`request keys on the ${name} local store (issue 27, migration 020)`, () => {
    it('binds a key to its first request per principal, and forgets it a day after', async () => {
      const { store } = await start([]);
      const owner = { subject: 'api:laptop', provider: 'api_key' };
      const claim = { owner, profile: 'default', key_hash: 'k1', digest: 'd1', logical_id: 'S1' };
      const at = '2026-12-06T12:00:00.000Z';
      expect(await store.claimRequestKey({ ...claim, at })).toEqual({ kind: 'claimed' });
      // A retry, a different request, another session: each is told what the key is bound to.
      const later = '2026-12-06T13:00:00.000Z';
      const bound = { kind: 'existing', digest: 'd1', logical_id: 'S1' };
      expect(await store.claimRequestKey({ ...claim, at: later })).toEqual(bound);
      expect(await store.claimRequestKey({ ...claim, digest: 'd2', logical_id: 'S2', at: later })).toEqual(
        bound,
      );
      // Another principal's key of the same name is its own.
      const other = { subject: 'api:ci', provider: 'api_key' };
      expect(await store.claimRequestKey({ ...claim, owner: other, digest: 'd3', at: later })).toEqual({
        kind: 'claimed',
      });
      // More than a day after its first use the binding is gone: the key binds afresh.
      const nextDay = '2026-12-07T12:00:01.000Z';
      expect(await store.claimRequestKey({ ...claim, digest: 'd4', at: nextDay })).toEqual({
        kind: 'claimed',
      });
      expect(await store.claimRequestKey({ ...claim, at: nextDay })).toMatchObject({ digest: 'd4' });
    });
  });

  describe(`creation and lookups on the ${name} local store (LOC-1, LOC-3)`, () => {
    it('commits a creation once per request_id and finds sessions by request, title and transcript', async () => {
      const { store } = await start([]);
      const receipt = { ...testReceipt('N1'), request_id: 'req-1' };
      const created = await store.commitCreation({
        receipt,
        origin: origin('N1'),
        title: 'Notes',
        hidden: false,
      });
      expect(created).toMatchObject({
        kind: 'created',
        session: { logical_id: 'N1', title: 'Notes', hidden: false, generation: 0, paused_reason: null },
      });
      const again = await store.commitCreation({
        receipt: { ...testReceipt('N2'), request_id: 'req-1' },
        origin: origin('N2'),
        title: null,
        hidden: false,
      });
      expect(again).toMatchObject({
        kind: 'existing',
        session: { logical_id: 'N1' },
        receipt: { logical_id: 'N1' },
      });
      expect(await store.getLocalSession('N2')).toBeNull();
      expect((await store.findByRequest(OWNER, 'default', 'req-1'))?.logical_id).toBe('N1');
      expect(await store.findByRequest(OWNER, 'other', 'req-1')).toBeNull();
      expect((await store.findByTitle(OWNER, 'default', 'Notes'))?.logical_id).toBe('N1');
      expect(await store.logicalIdOfTranscript('N1')).toBe('N1');
      expect(await store.logicalIdOfTranscript('nothing')).toBeNull();
      const evidence = await store.readReceiptEvidence('N1');
      expect(JSON.parse(evidence.raw!)).toEqual(receipt);
      expect(evidence.routedSessionId).toBe('N1');
      expect(await store.readReceiptEvidence('nothing')).toEqual({ raw: null, routedSessionId: null });
    });

    it('lists newest first (hidden ones only when asked), titles once when untitled, and pauses', async () => {
      const { store } = await start([]);
      for (const [id, hidden, at] of [
        ['H1', true, '2026-01-01T00:00:03.000Z'],
        ['V1', false, '2026-01-01T00:00:01.000Z'],
        ['V2', false, '2026-01-01T00:00:02.000Z'],
      ] as const) {
        const receipt = { ...testReceipt(id), created_at: at };
        await store.commitCreation({ receipt, origin: origin(id), title: null, hidden });
      }
      expect((await store.listLocalSessions({ limit: 10 })).map((r) => r.logical_id)).toEqual(['V2', 'V1']);
      const all = await store.listLocalSessions({ limit: 2, includeHidden: true });
      expect(all.map((r) => r.logical_id)).toEqual(['H1', 'V2']);
      // A keyset walk: the rows after a given one, in the same order, on either store.
      const after = await store.listLocalSessions({ limit: 10, before: all[1]! });
      expect(after.map((r) => r.logical_id)).toEqual(['V1']);
      const rest = await store.listLocalSessions({ limit: 10, includeHidden: true, before: all[0]! });
      expect(rest.map((r) => r.logical_id)).toEqual(['V2', 'V1']);
      expect((await store.allLogicalIds()).sort()).toEqual(['H1', 'V1', 'V2']);

      expect(await store.setTitle('V1', 'first', true)).toBe(true);
      expect(await store.setTitle('V1', 'second', true)).toBe(false);
      expect(await store.setTitle('V1', 'renamed', false)).toBe(true);
      expect(await store.getLocalSession('V1')).toMatchObject({ title: 'renamed' });

      await store.setPaused('V1', 'receipt broken');
      expect(await store.getLocalSession('V1')).toMatchObject({ paused_reason: 'receipt broken' });
      await store.admit(testAdmission('V1', 'p1'));
      expect(await store.claimNext('V1', 1)).toEqual({ kind: 'paused', reason: 'receipt broken' });
      await store.setPaused('V1', null);
      expect(await store.getLocalSession('V1')).toMatchObject({ paused_reason: null });
    });

    it('a fork starts with copied messages and names its source; archive marks; delete leaves nothing', async () => {
      const { store, sessions, sql } = await start(['L1']);
      await store.admit(testAdmission('L1', 'a1', 'hello'));
      const claim = await store.claimNext('L1', 1);
      expect(claim.kind).toBe('claimed');
      const source = await sessions.loadTranscript('L1');
      const fork = await store.commitCreation({
        receipt: testReceipt('F1'),
        origin: origin('F1'),
        title: 'fork',
        hidden: false,
        fork: {
          session_id: 'L1',
          message_id: source[0]!.id,
          messages: [{ role: 'user', content: 'hello', timestamp: source[0]!.timestamp }],
        },
      });
      expect(fork).toMatchObject({
        kind: 'created',
        session: { logical_id: 'F1', forked_from: { session_id: 'L1', message_id: source[0]!.id } },
      });
      const copied = await sessions.loadTranscript('F1');
      expect(copied.map((m) => [m.role, m.content, m.timestamp])).toEqual([
        ['user', 'hello', source[0]!.timestamp],
      ]);
      expect((await store.forksOf('L1')).map((r) => r.logical_id)).toEqual(['F1']);

      expect(await store.setArchived('F1', AT)).toBe(true);
      expect(await store.getLocalSession('F1')).toMatchObject({ archived_at: AT });
      expect(await store.setArchived('F1', null)).toBe(true);
      expect(await store.setArchived('nothing', AT)).toBe(false);

      // A running admission holds the session: nothing is deleted.
      expect(await store.deleteLocalSession('L1')).toEqual({ kind: 'running', admission_id: 'a1' });
      await store.settle({ ...settled('a1', 1, (claim as { generation: number }).generation) });
      expect(await store.deleteLocalSession('L1')).toEqual({ kind: 'deleted', transcripts: 1, messages: 1 });
      expect(await store.deleteLocalSession('L1')).toEqual({ kind: 'missing' });
      expect(await store.getLocalSession('L1')).toBeNull();
      expect(await sessions.loadTranscript('L1').catch(() => [])).toEqual([]);
      for (const [table, column, value] of [
        ['admissions', 'logical_id', 'L1'],
        ['private_receipts', 'key', receiptKey('L1')],
        ['sessions', 'session_key', localSessionKey('L1')],
        ['routes', 'session_key', localSessionKey('L1')],
      ] as const) {
        expect(await sql(`SELECT 1 FROM ${table} WHERE ${column} = ?`, [value])).toEqual([]);
      }
      // The fork keeps its messages and its (now dangling) link.
      expect(await sessions.loadTranscript('F1')).toHaveLength(1);
      expect(await store.getLocalSession('F1')).toMatchObject({ forked_from: { session_id: 'L1' } });
    });

    it('a crash inside a creation leaves nothing of it', async () => {
      const { withFaults, store } = await start([]);
      const crashing = withFaults({
        hit: (point) => {
          if (point === 'creation.transaction') throw new Error('killed');
        },
      });
      const creation = { receipt: testReceipt('C1'), origin: origin('C1'), title: null, hidden: false };
      await expect(crashing.commitCreation(creation)).rejects.toThrow('killed');
      expect(await store.getLocalSession('C1')).toBeNull();
      expect(await store.readReceiptEvidence('C1')).toEqual({ raw: null, routedSessionId: null });
      expect(await store.commitCreation(creation)).toMatchObject({ kind: 'created' });
    });
  });

  describe(`LIN-2 reset of a local session in one transaction (${name})`, () => {
    it('moves receipt and route to an empty child, closes the parent, keeps admissions, and validates cold', async () => {
      const { store, sessions, epoch } = await start(['A']);
      await store.admit(testAdmission('A', 'one'));
      await store.claimNext('A', epoch);
      await store.admit(testAdmission('A', 'two'));
      const before = await store.unsettled('A');

      expect((await reset(store, 'A', 'A2')).kind).toBe('reset');
      expect(await sessions.loadTranscript('A2')).toEqual([]);
      expect((await sessions.loadTranscript('A')).map((m) => m.content)).toEqual(['one']);
      expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A2');
      expect(await store.unsettled('A')).toEqual(before); // the running one and the queued one, untouched
      const route = (await sessions.lookupBySessionId('A2'))!;
      expect(route).toMatchObject({
        session_key: localSessionKey('A'),
        is_fresh_reset: true,
        total_tokens: 0,
      });
      expect(await store.logicalIdOfTranscript('A2')).toBe('A');

      const { gate: g, paused } = gate(store);
      expect(await g.ensure('A')).toBe(true);
      expect(g.get('A')).toMatchObject({
        current_session_id: 'A2',
        lineage: [{ kind: 'reset', from: 'A', to: 'A2', at: AT, request_id: 'r1' }],
      });
      expect(paused).toEqual([]);
    });

    it('a repeat of the same request_id changes nothing; a stale expected transcript is refused', async () => {
      const { store } = await start(['A']);
      await reset(store, 'A', 'A2');
      expect((await reset(store, 'A2', 'A3')).kind).toBe('duplicate');
      expect((await reset(store, 'A', 'A3', 'r2')).kind).toBe('moved');
      expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A2');
    });

    it('a crash inside the transaction leaves the old state whole', async () => {
      const { store, withFaults } = await start(['A']);
      const crashing = withFaults({
        hit: (point) => {
          if (point === 'reset.transaction') throw new Error('killed');
        },
      });
      await expect(reset(crashing, 'A', 'A2')).rejects.toThrow('killed');
      expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A');
      expect(await store.readLineageFacts(['A', 'A2'])).toEqual(
        new Map([
          ['A', expect.objectContaining({ closed_at: null, children: [] })],
          ['A2', null],
        ]),
      );
      expect(await gate(store).gate.ensure('A')).toBe(true);
    });
  });

  describe(`a model change of a local session (issue 26 item 6, ${name})`, () => {
    const change = (model: string) =>
      backend!.store.commitModel({ logical_id: 'A', provider: 'beta', model, at: AT });

    it('rewrites the policy, records the change, keeps the rest, and validates cold', async () => {
      const { store, sessions } = await start(['A']);
      const changed = await change('beta-large');
      expect(changed.kind).toBe('changed');
      expect((await change('beta-large')).kind).toBe('unchanged');
      expect((await change('beta-small')).kind).toBe('changed');
      expect(await store.commitModel({ logical_id: 'none', provider: 'beta', model: 'x', at: AT })).toEqual({
        kind: 'missing',
      });
      expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A');
      expect(await sessions.lookupBySessionId('A')).not.toBeNull();
      const { gate: g, paused } = gate(store);
      expect(await g.ensure('A')).toBe(true);
      expect(paused).toEqual([]);
      expect(g.get('A')).toMatchObject({
        current_session_id: 'A',
        lineage: [],
        policy: { provider: 'beta', model: 'beta-small', base_url: null, cwd: '/tmp' },
        model_changes: [
          { from: { provider: null, model: 'm' }, to: { provider: 'beta', model: 'beta-large' }, at: AT },
          {
            from: { provider: 'beta', model: 'beta-large' },
            to: { provider: 'beta', model: 'beta-small' },
            at: AT,
          },
        ],
      });
    });
  });

  describe(`LIN-3 planted rows fail closed at validation (${name})`, () => {
    it('a fork row beside the recorded child pauses the session, and the pause is announced once', async () => {
      const { store, sql } = await start(['A']);
      await reset(store, 'A', 'A2');
      await sql(
        `INSERT INTO sessions (session_id, session_key, created_at, parent_session_id, lineage_kind)
         VALUES ('FORK', ?, ?, 'A2', 'compression')`,
        [localSessionKey('A'), AT],
      );
      const { gate: g, paused } = gate(store);
      expect(await Promise.all([g.ensure('A'), g.ensure('A')])).toEqual([false, false]);
      expect(paused).toEqual([
        expect.stringMatching(/^A fork: the current transcript A2 has an unrecorded child FORK/),
      ]);
      expect((await store.getLocalSession('A'))?.paused_reason).toMatch(/^receipt fork/);
    });

    it('a receipt copied from another session (even with its logical id edited) never validates', async () => {
      const { store, sql } = await start(['A', 'B']);
      await reset(store, 'A', 'A2');
      const [row] = await sql<{ body: string }>('SELECT body FROM private_receipts WHERE key = ?', [
        receiptKey('A'),
      ]);
      const body = JSON.parse(row!.body) as CreationReceipt;
      await sql('UPDATE private_receipts SET body = ? WHERE key = ?', [
        JSON.stringify({ ...body, logical_id: 'B', lineage: body.lineage.map((s) => ({ ...s, from: 'B' })) }),
        receiptKey('B'),
      ]);
      await sql('UPDATE routes SET session_id = ? WHERE session_key = ?', ['A2', localSessionKey('B')]);
      const { gate: g, paused } = gate(store);
      expect(await g.ensure('B')).toBe(false);
      expect(paused[0]).toMatch(/^B broken_lineage: transcript A2 belongs to another session/);
    });
  });

  describe(`STO-2 rewind and retry of a local session, idempotent by request (${name})`, () => {
    async function withTurns(): Promise<LocalStoreBackend> {
      const b = await start(['A']);
      for (const text of ['first', 'second']) {
        await b.store.admit(testAdmission('A', text));
        const claim = await b.store.claimNext('A', b.epoch);
        if (claim.kind !== 'claimed') throw new Error(claim.kind);
        await b.store.settle({
          ...settled(text, b.epoch, claim.generation),
          messages: [{ role: 'assistant', content: `answer to ${text}` }],
        });
      }
      return b;
    }

    it('undo soft-deletes the last turn once, however often the request is repeated', async () => {
      const { store, sessions } = await withTurns();
      const undo = () => store.commitRewind({ logical_id: 'A', request_key: 'A:undo:u1', turns: 1, at: AT });
      expect(await undo()).toEqual({
        rewound_count: 2,
        turns_undone: 1,
        target_text: 'second',
        duplicate: false,
      });
      expect(await undo()).toEqual({
        rewound_count: 2,
        turns_undone: 1,
        target_text: 'second',
        duplicate: true,
      });
      expect((await sessions.loadTranscript('A')).map((m) => m.content)).toEqual([
        'first',
        'answer to first',
      ]);
    });

    it('retry undoes the last turn and admits its text again in one transaction, once', async () => {
      const { store, sessions } = await withTurns();
      const retry = () =>
        store.commitRetry({
          admission: {
            admission_id: `x${Math.random()}`,
            logical_id: 'A',
            submission_id: 'retry:t1',
            submitter: OWNER,
            profile: 'default',
            binding: null,
          },
          request_key: 'A:retry:t1',
          at: AT,
        });
      const first = await retry();
      expect(first).toMatchObject({
        kind: 'retried',
        admission: { text: 'second', state: 'queued', submission_id: 'retry:t1' },
      });
      const again = await retry();
      expect(again).toMatchObject({
        kind: 'duplicate',
        admission: { admission_id: first.kind === 'retried' ? first.admission.admission_id : '' },
      });
      expect((await sessions.loadTranscript('A')).map((m) => m.content)).toEqual([
        'first',
        'answer to first',
      ]);
      expect((await store.unsettled('A')).map((a) => a.text)).toEqual(['second']);
    });
  });

  describe(`an action and its audit row commit together (issue 30, ${name})`, () => {
    const row = (action: AuditEntry['action'], session_id: string): AuditEntry => ({
      at: AT,
      principal: 'member:alice',
      path: 'native',
      action,
      session_id,
      outcome: 'ok',
      detail: null,
    });
    /** A row the database refuses (its principal is NOT NULL): the commit it is in fails. */
    const refused = (action: AuditEntry['action'], session_id: string): AuditEntry => ({
      ...row(action, session_id),
      principal: null as unknown as string,
    });
    const rows = async () =>
      (
        await backend!.sql<{ action: string; session_id: string }>(
          'SELECT action, session_id FROM audit_log ORDER BY id',
        )
      ).map((r) => `${r.action} ${r.session_id}`);

    it('a creation, an admission and a reset each commit their row with them', async () => {
      const { store } = await start(['A']);
      const creation = { receipt: testReceipt('C1'), origin: origin('C1'), title: null, hidden: false };
      expect(await store.commitCreation({ ...creation, audit: row('created', 'C1') })).toMatchObject({
        kind: 'created',
      });
      await store.admit({ ...testAdmission('A', 'a1'), audit: row('submitted', 'A') });
      // A repeat of the same submission is answered (duplicate): its attempt is recorded too.
      await store.admit({ ...testAdmission('A', 'a1'), admission_id: 'other', audit: row('submitted', 'A') });
      // Refused by the store (no such session, a conflicting repeat): nothing was done, no row.
      await store.admit({ ...testAdmission('nowhere', 'a2'), audit: row('submitted', 'nowhere') });
      const conflict = { ...testAdmission('A', 'a1'), digest: 'other text', audit: row('submitted', 'A') };
      expect((await store.admit(conflict)).kind).toBe('conflict');
      await store.commitReset({
        logical_id: 'A',
        expected_session_id: 'A',
        new_session_id: 'A2',
        request_id: 'r1',
        at: AT,
        audit: row('reset', 'A'),
      });
      expect(await rows()).toEqual(['created C1', 'submitted A', 'submitted A', 'reset A']);
    });

    it('a row that cannot be written takes its action with it: neither is stored', async () => {
      const { store } = await start(['A']);
      const creation = { receipt: testReceipt('C1'), origin: origin('C1'), title: null, hidden: false };
      await expect(store.commitCreation({ ...creation, audit: refused('created', 'C1') })).rejects.toThrow();
      expect(await store.getLocalSession('C1')).toBeNull();
      expect(await store.readReceiptEvidence('C1')).toEqual({ raw: null, routedSessionId: null });

      await expect(
        store.admit({ ...testAdmission('A', 'a1'), audit: refused('submitted', 'A') }),
      ).rejects.toThrow();
      expect(await store.getAdmission('a1')).toBeNull();
      expect(await store.unsettled('A')).toEqual([]);

      const reset = {
        logical_id: 'A',
        expected_session_id: 'A',
        new_session_id: 'A2',
        request_id: 'r1',
        at: AT,
      };
      await expect(store.commitReset({ ...reset, audit: refused('reset', 'A') })).rejects.toThrow();
      expect((await store.readReceiptEvidence('A')).routedSessionId).toBe('A');
      expect(await rows()).toEqual([]);
      // The same actions with a good row commit, each with its own.
      await store.commitCreation({ ...creation, audit: row('created', 'C1') });
      await store.admit({ ...testAdmission('A', 'a1'), audit: row('submitted', 'A') });
      await store.commitReset({ ...reset, audit: row('reset', 'A') });
      expect(await rows()).toEqual(['created C1', 'submitted A', 'reset A']);
    });

    it('an action that fails inside its transaction leaves no row', async () => {
      const { store, withFaults } = await start(['A']);
      const crashing = withFaults({
        hit: (point) => {
          if (point === 'creation.transaction' || point === 'reset.transaction') throw new Error('killed');
        },
      });
      const creation = { receipt: testReceipt('C1'), origin: origin('C1'), title: null, hidden: false };
      await expect(crashing.commitCreation({ ...creation, audit: row('created', 'C1') })).rejects.toThrow(
        'killed',
      );
      await expect(
        crashing.commitReset({
          logical_id: 'A',
          expected_session_id: 'A',
          new_session_id: 'A2',
          request_id: 'r1',
          at: AT,
          audit: row('reset', 'A'),
        }),
      ).rejects.toThrow('killed');
      expect(await store.getLocalSession('C1')).toBeNull();
      expect(await rows()).toEqual([]);
    });
  });
}
