/**
 * The behaviour every DeliveryLedger backend must show (REC-4, REC-5, STO-1), observed through the
 * contracts only. A backend's test file calls runDeliveryLedgerSuite with a factory; SQLite and
 * PostgreSQL run the same cases.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError } from '../../src/domain/errors.js';
import type { InboundRef, MessageEvent } from '../../src/domain/messaging/adapter.js';
import {
  STALE_NOTICE,
  STUCK_LOOP_RESTARTS,
  SUSPENDED_NOTICE,
  suspendedNotice,
} from '../../src/domain/messaging/recovery.js';
import { SessionSource } from '../../src/domain/session/source.js';
import {
  INBOUND_RETENTION_SECONDS,
  type DeliveryLedger,
  type ReplyRecord,
} from '../../src/domain/ports/delivery-ledger.js';
import type { SessionStore } from '../../src/domain/ports/session-store.js';
import { assistant, user } from './fixtures.js';

export interface LedgerHarness {
  store: SessionStore;
  ledger: DeliveryLedger;
  /** Closes both and opens the same storage again. */
  reopen(): Promise<{ store: SessionStore; ledger: DeliveryLedger }>;
  cleanup(): Promise<void>;
}

const KEY = 'agent:main:telegram:dm:111';
const OTHER = 'agent:main:telegram:dm:222';
const origin = (chat: string) => new SessionSource({ platform: 'telegram', chat_id: chat, chat_type: 'dm' });
const ref = (message_id: string, chat = '111'): InboundRef => ({
  platform: 'telegram',
  chat_id: chat,
  message_id,
});
const event = (text: string): MessageEvent => ({
  source: origin('111'),
  text,
  internal: false,
  received_at: '2026-01-01T00:00:00.000Z',
});
const RECOVER = { maxAgeSeconds: 3600 };

export function runDeliveryLedgerSuite(name: string, open: () => Promise<LedgerHarness>): void {
  describe(`${name}: DeliveryLedger behaviour`, () => {
    let h: LedgerHarness;
    let store: SessionStore;
    let ledger: DeliveryLedger;
    let sid: string;
    beforeEach(async () => {
      h = await open();
      ({ store, ledger } = h);
      sid = (await store.getOrCreateSession(KEY, origin('111').toJSON())).entry.session_id;
      await store.getOrCreateSession(OTHER, origin('222').toJSON());
    });
    afterEach(() => h.cleanup());

    const reply = (turnId: string, text = 'the answer', sessionKey = KEY): ReplyRecord => ({
      turnId,
      sessionKey,
      sessionId: sid,
      target: { platform: 'telegram', chat_id: '111', thread_id: null, reply_to: '7' },
      text,
      silent: false,
    });

    it('startTurn: marker, message taken, backlog row gone and input stored, in one commit', async () => {
      await ledger.saveBacklog(KEY, {
        starting: null,
        waiting: [{ itemId: 'i1', kind: 'message', event: event('hello'), inbound: ref('1') }],
        settled: [],
      });
      expect(await ledger.inboundOutcome(ref('1'))).toBe('waiting');
      await ledger.startTurn(KEY, ref('1'), {
        backlogItem: 'i1',
        input: { sessionId: sid, message: user('hello') },
      });
      expect(await ledger.inboundOutcome(ref('1'))).toBe('turn');
      expect(await ledger.listBacklog()).toEqual([]);
      expect((await store.loadTranscript(sid)).map((m) => m.content)).toEqual(['hello']);
      expect((await ledger.recover(RECOVER)).resumed).toEqual([KEY]);
    });

    it("REC-7 a marker keeps its turn's steps: the started tool call and the prompt survive a crash into the report", async () => {
      const started = new Date(Date.now() - 5000);
      const call = {
        id: 'call_1',
        type: 'function' as const,
        function: { name: 'terminal', arguments: '{}' },
      };
      await ledger.startTurn(KEY, null, {
        now: started,
        turnId: 'msg_a',
        input: { sessionId: sid, message: { ...user('go'), admission_id: 'msg_a' } },
      });
      await ledger.startTurn(OTHER, null, { turnId: 'msg_b' });
      const prompt = {
        prompt_id: 'p_1',
        type: 'approval' as const,
        tool_call_id: 'call_1',
        requested_at: started.toISOString(),
      };
      await ledger.recordTurnPrompt(KEY, 'msg_a', prompt);
      // The message showing the prompt joins its record; one naming another prompt changes nothing.
      await ledger.recordPromptShown(KEY, 'msg_a', 'p_1', '77');
      await ledger.recordPromptShown(KEY, 'msg_a', 'p_other', '78');
      await ledger.markToolStarted(KEY, 'msg_a', 'call_1');
      // Fenced to the marker's turn: a write of another turn changes nothing.
      await ledger.markToolStarted(OTHER, 'msg_a', 'call_9');
      await ledger.recordTurnPrompt(OTHER, 'msg_a', prompt);
      await ledger.recordPromptShown(OTHER, 'msg_a', 'p_1', '79');
      ({ store, ledger } = await h.reopen());
      const report = await ledger.recover(RECOVER);
      expect(report.resumed).toEqual([KEY, OTHER]);
      expect(Object.keys(report.steps)).toEqual([KEY, OTHER]);
      expect(report.steps[KEY]).toEqual({
        turnId: 'msg_a',
        sessionId: sid,
        startedAt: started.toISOString(),
        toolStarted: 'call_1',
        prompt: { ...prompt, message_id: '77' },
        resumes: 1,
      });
      expect(report.steps[OTHER]).toMatchObject({
        turnId: 'msg_b',
        toolStarted: null,
        prompt: null,
        resumes: 1,
      });

      // The result clears the mark and the prompt in the commit that stores it; a new start has no steps.
      await ledger.startTurn(KEY, null, { turnId: 'msg_a', now: started });
      await ledger.recordTurnPrompt(KEY, 'msg_a', { ...prompt, execution_generation: 2 });
      await ledger.markToolStarted(KEY, 'msg_a', 'call_1');
      await ledger.recordToolResult(KEY, 'msg_a', sid, [
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', name: 'terminal', content: 'done', admission_id: 'msg_a' },
      ]);
      // A message id arriving after the prompt was cleared does not bring the prompt back.
      await ledger.recordPromptShown(KEY, 'msg_a', 'p_1', '80');
      await ledger.startTurn(OTHER, null, { turnId: 'msg_c' });
      const after = await ledger.recover(RECOVER);
      // The second restart in a row that found the key mid-turn: the resumed turn's generation is 3.
      expect(after.steps[KEY]).toMatchObject({
        turnId: 'msg_a',
        toolStarted: null,
        prompt: null,
        resumes: 2,
      });
      expect(after.steps[OTHER]).toMatchObject({ turnId: 'msg_c', toolStarted: null, prompt: null });
      expect((await store.loadTranscript(sid)).map((m) => m.content)).toEqual(['go', null, 'done']);
      // A marker without a turn id (an older writer) reports no steps.
      await ledger.startTurn(KEY, null);
      expect((await ledger.recover(RECOVER)).steps).toEqual({});
    });

    it('startTurn on a key with no session is not_found and writes nothing; its batch-mates commit', async () => {
      const [bad, good] = await Promise.allSettled([
        ledger.startTurn('agent:main:telegram:dm:999', ref('5', '999')),
        ledger.startTurn(OTHER, ref('6', '222')),
      ]);
      expect(bad.status === 'rejected' && bad.reason).toBeInstanceOf(NotFoundError);
      expect(good.status).toBe('fulfilled');
      expect(await ledger.isInboundTaken(ref('5', '999'))).toBe(false);
      expect(await ledger.isInboundTaken(ref('6', '222'))).toBe(true);
    });

    it('takeInbound is idempotent and records the outcome; an unknown message has none', async () => {
      expect(await ledger.inboundOutcome(ref('9'))).toBeNull();
      expect(await ledger.isInboundTaken(ref('9'))).toBe(false);
      await ledger.takeInbound(ref('9'), KEY);
      await ledger.takeInbound(ref('9'), KEY);
      expect(await ledger.inboundOutcome(ref('9'))).toBe('command');
      await ledger.takeInbound(ref('10'), KEY, { outcome: 'answer' });
      expect(await ledger.inboundOutcome(ref('10'))).toBe('answer');
      expect(await ledger.isInboundTaken(ref('9'))).toBe(true);
    });

    it('saveBacklog mirrors the queue in order, keeps the starting row, settles what left it; it survives a reopen', async () => {
      await ledger.saveBacklog(KEY, {
        starting: null,
        waiting: [
          { itemId: 'a', kind: 'message', event: event('one'), inbound: ref('1') },
          { itemId: 'b', kind: 'queued', event: event('two'), inbound: ref('2') },
          { itemId: 'c', kind: 'internal', event: event('three'), inbound: null },
        ],
        settled: [],
      });
      await ledger.saveBacklog(KEY, {
        starting: 'a',
        waiting: [{ itemId: 'd', kind: 'message', event: event('four'), inbound: ref('4') }],
        settled: [{ inbound: ref('2'), outcome: 'collapsed' }],
      });
      ({ store, ledger } = await h.reopen());
      const items = await ledger.listBacklog();
      expect(items.map((i) => [i.sessionKey, i.itemId, i.kind, i.event.text])).toEqual([
        [KEY, 'a', 'message', 'one'],
        [KEY, 'd', 'message', 'four'],
      ]);
      expect(items[0]!.event.source.chat_id).toBe('111');
      expect(await ledger.inboundOutcome(ref('2'))).toBe('collapsed');
      expect(await ledger.inboundOutcome(ref('4'))).toBe('waiting');
    });

    it('applySteers stores the steers in the transcript, ends their backlog rows and takes their messages, in one commit; a steer survives a reopen', async () => {
      const steer = { ...event('use staging'), steer: true as const };
      await ledger.saveBacklog(KEY, {
        starting: null,
        waiting: [
          { itemId: 's1', kind: 'queued', event: steer, inbound: ref('31') },
          { itemId: 'q1', kind: 'queued', event: event('later'), inbound: ref('32') },
        ],
        settled: [],
      });
      ({ store, ledger } = await h.reopen());
      const restored = await ledger.listBacklog();
      expect(restored.map((i) => [i.itemId, i.event.steer ?? false])).toEqual([
        ['s1', true],
        ['q1', false],
      ]);
      await ledger.applySteers(
        KEY,
        sid,
        [{ itemId: 's1', inbound: ref('31') }],
        [{ role: 'user', content: 'use staging', admission_id: 't1', steer_id: 's1' }],
      );
      expect((await ledger.listBacklog()).map((i) => i.itemId)).toEqual(['q1']);
      expect(await ledger.inboundOutcome(ref('31'))).toBe('turn');
      expect(await ledger.inboundOutcome(ref('32'))).toBe('waiting');
      const stored = (await store.loadTranscript(sid)).at(-1);
      expect(stored).toMatchObject({
        role: 'user',
        content: 'use staging',
        admission_id: 't1',
        steer_id: 's1',
      });
      // A steer of a session that is not there is refused whole: its row and message stay waiting.
      await expect(
        ledger.applySteers(
          KEY,
          'no-such-session',
          [{ itemId: 'q1', inbound: ref('32') }],
          [{ role: 'user', content: 'later' }],
        ),
      ).rejects.toThrow();
      expect((await ledger.listBacklog()).map((i) => i.itemId)).toEqual(['q1']);
      expect(await ledger.inboundOutcome(ref('32'))).toBe('waiting');
    });

    it('recordReply is idempotent per turn, drops the marker; a silent reply is born delivered', async () => {
      await ledger.startTurn(KEY, null);
      const first = await ledger.recordReply(reply('t1'));
      const again = await ledger.recordReply(reply('t1', 'other text'));
      expect(again.delivery_id).toBe(first.delivery_id);
      expect(again).toMatchObject({
        text: 'the answer',
        delivered_at: null,
        recovered: false,
        silent: false,
      });
      expect(first.target).toEqual({ platform: 'telegram', chat_id: '111', thread_id: null, reply_to: '7' });
      const silent = await ledger.recordReply({ ...reply('t2'), silent: true, text: '[SILENT]' });
      expect(silent.delivered_at).not.toBeNull();
      expect((await ledger.listUndelivered()).map((d) => d.turn_id)).toEqual(['t1']);
      expect(await ledger.recover(RECOVER)).toMatchObject({ cleanShutdown: false, resumed: [], settled: [] });
    });

    it('markDelivered once; readDelivery and listUndelivered see it; an unknown id reads null', async () => {
      const a = await ledger.recordReply(reply('t1'));
      const b = await ledger.recordReply(reply('t2'));
      expect((await ledger.listUndelivered()).map((d) => d.delivery_id)).toEqual([
        a.delivery_id,
        b.delivery_id,
      ]);
      expect(await ledger.markDelivered(a.delivery_id)).toBe(true);
      expect(await ledger.markDelivered(a.delivery_id)).toBe(false);
      expect((await ledger.readDelivery(a.delivery_id))?.delivered_at).not.toBeNull();
      expect((await ledger.listUndelivered()).map((d) => d.delivery_id)).toEqual([b.delivery_id]);
      expect(await ledger.readDelivery(999_999)).toBeNull();
    });

    it('endTurn stores answer, usage, resume and reply together; without a reply it only drops the marker', async () => {
      await store.markResumePending(KEY, 'restart_timeout');
      await ledger.startTurn(KEY, null);
      const delivery = await ledger.endTurn(
        KEY,
        {
          sessionId: sid,
          messages: [assistant('done')],
          usage: { total_tokens: 12 },
          clearResumePending: true,
          endStreak: true,
        },
        reply('t1', 'done'),
      );
      expect(delivery).toMatchObject({ turn_id: 't1', text: 'done' });
      const entry = (await store.lookupBySessionId(sid))!;
      expect(entry).toMatchObject({ total_tokens: 12, resume_pending: false });
      expect((await store.loadTranscript(sid)).map((m) => m.content)).toEqual(['done']);
      await ledger.startTurn(KEY, null);
      const none = await ledger.endTurn(
        KEY,
        { sessionId: sid, messages: [], usage: null, clearResumePending: false, endStreak: false },
        null,
      );
      expect(none).toBeNull();
      expect((await ledger.recover(RECOVER)).resumed).toEqual([]);
    });

    it('after a clean shutdown, recovery skips the markers and resumes nothing', async () => {
      await ledger.startTurn(KEY, null);
      await ledger.writeCleanShutdown();
      ({ store, ledger } = await h.reopen());
      expect(await ledger.recover(RECOVER)).toEqual({
        cleanShutdown: true,
        resumed: [],
        suspended: [],
        settled: [],
        stale: [],
        steps: {},
      });
      expect((await store.lookupBySessionId(sid))?.resume_pending).toBe(false);
      expect((await ledger.recover(RECOVER)).cleanShutdown).toBe(false);
    });

    it('recovery: a reply stored only as the final assistant message goes on the ledger, flagged recovered', async () => {
      await ledger.startTurn(KEY, null, { input: { sessionId: sid, message: user('q') } });
      await store.appendToTranscript(sid, assistant('the stored answer'));
      ({ store, ledger } = await h.reopen());
      const report = await ledger.recover(RECOVER);
      expect(report).toMatchObject({ settled: [KEY], resumed: [] });
      const [owed] = await ledger.listUndelivered();
      expect(owed).toMatchObject({ text: 'the stored answer', recovered: true, session_key: KEY });
    });

    it(`recovery suspends a key found mid-turn ${STUCK_LOOP_RESTARTS} times in a row, and owes its chat a notice; endStreak resets`, async () => {
      for (let i = 1; i < STUCK_LOOP_RESTARTS; i++) {
        await ledger.startTurn(KEY, null);
        expect((await ledger.recover(RECOVER)).resumed).toEqual([KEY]);
      }
      await ledger.endStreak(KEY);
      await ledger.startTurn(KEY, null);
      expect((await ledger.recover(RECOVER)).resumed).toEqual([KEY]);
      for (let i = 1; i < STUCK_LOOP_RESTARTS; i++) {
        await ledger.startTurn(KEY, null);
        await ledger.recover(RECOVER);
      }
      expect((await store.lookupBySessionId(sid))?.suspended).toBe(true);
      expect((await ledger.listUndelivered()).map((d) => d.text)).toEqual([SUSPENDED_NOTICE]);
    });

    it('recovery.max_resumes: with stuckAfter 1 the first unclean restart that finds a turn suspends it, with its own notice', async () => {
      await ledger.startTurn(KEY, null);
      ({ store, ledger } = await h.reopen());
      expect(await ledger.recover({ ...RECOVER, stuckAfter: 1 })).toMatchObject({
        resumed: [],
        suspended: [KEY],
      });
      expect((await store.lookupBySessionId(sid))?.suspended).toBe(true);
      expect((await ledger.listUndelivered()).map((d) => d.text)).toEqual([suspendedNotice(1)]);
      expect(suspendedNotice(1)).toContain('a restart of the gateway,');
      // At 2, the first restart continues the turn and the second suspends it.
      await ledger.startTurn(OTHER, null);
      expect((await ledger.recover({ ...RECOVER, stuckAfter: 2 })).resumed).toEqual([OTHER]);
      await ledger.startTurn(OTHER, null);
      expect((await ledger.recover({ ...RECOVER, stuckAfter: 2 })).suspended).toEqual([OTHER]);
    });

    it('recovery does not resume a turn older than freshnessSeconds and owes its chat the stale notice once', async () => {
      const now = new Date('2026-05-01T00:00:00Z');
      const started = (secondsAgo: number) => new Date(now.getTime() - secondsAgo * 1000);
      await ledger.startTurn(KEY, null, { now: started(120) });
      await ledger.startTurn(OTHER, null, { now: started(30) });
      const report = await ledger.recover({ ...RECOVER, freshnessSeconds: 60, now });
      expect(report).toMatchObject({ resumed: [OTHER], stale: [KEY] });
      expect((await store.lookupBySessionId(sid))?.resume_pending).toBe(false);
      const owed = await ledger.listUndelivered();
      expect(owed.map((d) => [d.session_key, d.text])).toEqual([[KEY, STALE_NOTICE]]);
      expect(owed[0]).toMatchObject({ recovered: false, target: { chat_id: '111', reply_to: null } });
      // Its marker is gone with it: the next recovery neither resumes it nor tells the chat again.
      expect(await ledger.recover({ ...RECOVER, freshnessSeconds: 60, now })).toMatchObject({
        resumed: [],
        stale: [],
      });
      expect(await ledger.listUndelivered()).toHaveLength(1);
    });

    it('recovery forgets inbound records older than the retention and keeps the rest', async () => {
      const now = new Date('2026-05-01T00:00:00Z');
      await ledger.takeInbound(ref('old'), KEY, {
        now: new Date(now.getTime() - (INBOUND_RETENTION_SECONDS + 60) * 1000),
      });
      await ledger.takeInbound(ref('new'), KEY, { now: new Date(now.getTime() - 60_000) });
      await ledger.recover({ ...RECOVER, now });
      expect(await ledger.isInboundTaken(ref('old'))).toBe(false);
      expect(await ledger.isInboundTaken(ref('new'))).toBe(true);
    });
  });
}
