/**
 * Crash recovery of messaging sessions. The crashed state is written into the database the way a
 * SIGKILL leaves it (a marker set; a reply on the ledger or not), then a new gateway starts on it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RESUME_NOTE } from '../../../src/domain/messaging/turn.js';
import { insertDelivery } from '../../../src/storage/sqlite/ops/deliveries.js';
import { putTurnMarker } from '../../../src/storage/sqlite/ops/turn-markers.js';
import { ALICE, createHarness, dmWith, type Harness } from '../../fixtures/messaging-harness.js';

const KEY = 'agent:main:telegram:dm:111';
let h: Harness;

afterEach(async () => {
  await h?.dispose();
});

/** One answered exchange, then a graceful stop: the session exists with Telegram as its origin. */
async function conversationThenStop(): Promise<string> {
  h = await createHarness();
  h.build();
  await h.start();
  h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'hello' });
  await h.waitForText(ALICE.id, /you said: hello/);
  const sessionId = (await h.store.listSessions()).entries[0]!.session_id;
  await h.stop();
  return sessionId;
}

/** Reopens the file and writes what a process killed mid-turn leaves behind. */
function writeCrashedTurn(sessionId: string, reply: string | null, options: { silent?: boolean } = {}): void {
  h.build();
  const db = h.store.db;
  const started = new Date();
  db.prepare('DELETE FROM messaging_state').run(); // no clean-shutdown marker: the process died
  putTurnMarker(db, KEY, sessionId, started);
  if (reply !== null) {
    insertDelivery(
      db,
      {
        turn_id: 'msg_crashed',
        session_key: KEY,
        session_id: sessionId,
        platform: 'telegram',
        chat_id: String(ALICE.id),
        thread_id: null,
        reply_to: null,
        text: reply,
        silent: options.silent ?? false,
      },
      new Date(started.getTime() + 1),
    );
  }
}

describe('REC-4 messaging crash recovery', () => {
  it('a persisted but undelivered reply is delivered once, marked recovered, never regenerated', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, 'the answer that was never sent');
    const requestsBefore = h.model.requests.length;
    const done = h.gateway.events.next('recovery:done');
    const marked = h.gateway.events.next('delivery:sent');
    await h.start();
    const report = await done;
    expect(report.settled).toEqual([KEY]);
    expect(report.resumed).toEqual([]);
    await h.waitForText(ALICE.id, /^Recovered reply[\s\S]*the answer that was never sent/);
    // Marked delivered in a group commit just after the send: the crash below comes after it.
    await marked;
    expect(h.model.requests.length).toBe(requestsBefore);
    expect(await h.ledger.listUndelivered()).toEqual([]);

    // Crash again right away: a delivered reply is never sent again.
    await h.crash();
    h.build();
    await h.start();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'after' });
    await h.waitForText(ALICE.id, /you said: after/);
    expect(h.textsTo(ALICE.id).filter((t) => t.includes('never sent'))).toHaveLength(1);
  });

  it('a recovered reply whose send fails during start-up is retried in the same run', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, 'owed across the restart');
    // Longer than the adapter waits: the start-up sweep's send fails and the reply stays owed.
    h.standIn.rateLimit('sendMessage', 1, 3600);
    const failed = h.gateway.events.next('delivery:failed');
    const sent = h.gateway.events.next('delivery:sent');
    await h.start();
    await failed;
    expect((await sent).recovered).toBe(true);
    expect(h.textsTo(ALICE.id).filter((t) => t.includes('owed across the restart'))).toHaveLength(1);
    expect(await h.ledger.listUndelivered()).toEqual([]);
  });

  it('a silent-only persisted reply delivers nothing and resumes nothing', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, '[SILENT]', { silent: true });
    const sentBefore = h.standIn.sent().length;
    const done = h.gateway.events.next('recovery:done');
    await h.start();
    const report = await done;
    expect(report).toMatchObject({ settled: [KEY], resumed: [], delivered: 0 });
    expect(h.standIn.sent().length).toBe(sentBefore);
  });

  it('a marked turn with no reply is resumed once and one reply reaches the chat', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, null);
    const requestsBefore = h.model.requests.length;
    const done = h.gateway.events.next('recovery:done');
    const completed = h.gateway.events.next('turn:complete');
    await h.start();
    expect((await done).auto_continued).toEqual([KEY]);
    expect((await completed).outcome).toBe('completed');
    await h.waitForText(ALICE.id, /Continue where you left off/);
    expect(h.model.requests.length).toBe(requestsBefore + 1);
    const lastUser = h.model.requests.at(-1)!.body!.messages!.at(-1)!;
    expect(lastUser.content).toBe(RESUME_NOTE);
    const entry = (await h.store.listSessions()).entries[0]!;
    expect(entry.session_id).toBe(sessionId); // same conversation, not a new one
    expect(entry.resume_pending).toBe(false);

    // A graceful restart afterwards continues nothing more.
    await h.stop();
    h.build();
    const again = h.gateway.events.next('recovery:done');
    await h.start();
    expect(await again).toMatchObject({ cleanShutdown: true, auto_continued: [] });
    expect(h.model.requests.length).toBe(requestsBefore + 1);
  });

  it('LIN-2: a turn interrupted by /reset is not resumed into the new conversation', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, null);
    // The /reset committed before the process died; the turn it interrupted never ended.
    await h.store.resetSession(KEY);
    const requestsBefore = h.model.requests.length;
    const done = h.gateway.events.next('recovery:done');
    await h.start();
    expect(await done).toMatchObject({ resumed: [], suspended: [] });
    const entry = (await h.store.listSessions()).entries[0]!;
    expect(entry).toMatchObject({ resume_pending: false, is_fresh_reset: true });
    expect(entry.session_id).not.toBe(sessionId);
    expect(await h.store.loadTranscript(entry.session_id)).toEqual([]);
    expect(h.model.requests.length).toBe(requestsBefore);
  });

  it('REC-5: a session active across three consecutive restarts is suspended', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, null);
    h.model.hold();
    const requestsBefore = h.model.requests.length;
    for (let restart = 1; restart <= 2; restart++) {
      const done = h.gateway.events.next('recovery:done');
      await h.start();
      expect((await done).resumed).toEqual([KEY]);
      await h.model.waitForRequests(requestsBefore + restart); // the resumed turn is running
      await h.crash();
      h.build();
    }
    const done = h.gateway.events.next('recovery:done');
    await h.start();
    expect(await done).toMatchObject({ suspended: [KEY], resumed: [], auto_continued: [] });
    h.model.release();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'fresh start' });
    await h.waitForText(ALICE.id, /you said: fresh start/);
    const entry = (await h.store.listSessions()).entries[0]!;
    expect(entry.session_id).not.toBe(sessionId);
  });

  it('a restart under another time zone loses nothing and duplicates nothing', async () => {
    const originalTz = process.env.TZ;
    try {
      process.env.TZ = 'Pacific/Kiritimati'; // UTC+14
      const sessionId = await conversationThenStop();
      writeCrashedTurn(sessionId, null);
      await h.store.close();
      process.env.TZ = 'America/Los_Angeles'; // UTC-8: local clocks now read 22 hours earlier
      h.build();
      const done = h.gateway.events.next('recovery:done');
      await h.start();
      const report = await done;
      // Not mistaken for stale, and the previous turn's delivered reply is not taken as this one's.
      expect(report).toMatchObject({ resumed: [KEY], settled: [], delivered: 0 });
      await h.waitForText(ALICE.id, /Continue where you left off/);
      expect(h.textsTo(ALICE.id).filter((t) => t.includes('you said: hello'))).toHaveLength(1);
      expect(h.textsTo(ALICE.id).filter((t) => t.includes('Continue where you left off'))).toHaveLength(1);
    } finally {
      if (originalTz === undefined) delete process.env.TZ;
      else process.env.TZ = originalTz;
    }
  });

  it('messages that arrive during start-up recovery wait for it, then are answered', async () => {
    const sessionId = await conversationThenStop();
    writeCrashedTurn(sessionId, 'owed reply');
    // The recovered delivery meets a 429: the sweep waits, and a message arrives meanwhile.
    h.standIn.rateLimit('sendMessage', 1, 1);
    const deferred = h.gateway.events.next('inbound:deferred');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'are you there' });
    const done = h.gateway.events.next('recovery:done');
    await h.start();
    await deferred;
    await done;
    await h.waitForText(ALICE.id, /you said: are you there/);
    const texts = h.textsTo(ALICE.id);
    const recovered = texts.findIndex((t) => t.startsWith('Recovered reply'));
    const answered = texts.findIndex((t) => t.includes('are you there'));
    expect(recovered).toBeGreaterThanOrEqual(0);
    expect(answered).toBeGreaterThan(recovered);
  });
});

describe('REC-6 a drain that times out', () => {
  it('marks the running turn resume_pending, starts nothing queued, and ends with the marker', async () => {
    h = await createHarness();
    h.build();
    await h.start();
    const started: string[] = [];
    h.gateway.events.on('turn:start', (e) => started.push(e.text));
    h.model.hold();
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'slow one' });
    await h.model.waitForRequests(1);
    const followUp = h.gateway.events.next('inbound:accepted', (e) => e.text === 'waiting one');
    h.standIn.inject({ chat: dmWith(ALICE), from: ALICE, text: 'waiting one' });
    await followUp;

    const interrupted = h.gateway.events.next('turn:complete');
    await h.gateway.stop({ timeoutMs: 1 });
    expect((await interrupted).outcome).toBe('interrupted');
    expect(h.gateway.lifecycleState).toBe('stopped');
    // Once stop() resolved nothing runs any more: the follow-up never started a turn.
    await new Promise((resolve) => setImmediate(resolve));
    expect(started).toEqual(['slow one']);
    const entry = (await h.store.listSessions()).entries[0]!;
    expect(entry).toMatchObject({ resume_pending: true, resume_reason: 'shutdown_timeout' });
    const marker = h.store.db.prepare(`SELECT 1 FROM messaging_state WHERE name = 'clean_shutdown'`).get();
    expect(marker).toBeDefined();
  });
});
