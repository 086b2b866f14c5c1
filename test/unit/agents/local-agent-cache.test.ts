/**
 * The agent cache on the local-session path (AGC-1..4): real SQLite, the demo model over loopback
 * HTTP, turns through prompt.submit. What the model receives is compared as the request bodies
 * the demo model recorded.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Housekeeping } from '../../../src/daemon/housekeeping.js';
import type { GatewayError } from '../../../src/domain/errors.js';
import { requestBodies, startLocalHarness, type LocalHarness } from '../../fixtures/local-harness.js';

let h: LocalHarness;
afterEach(async () => h.close());

/** The messages of the last request, as the model saw them. */
function lastMessages(): { role: string; content: string | null }[] {
  const bodies = requestBodies(h.demo);
  return (JSON.parse(bodies.at(-1)!) as { messages: { role: string; content: string | null }[] }).messages;
}

function housekeeping(): Housekeeping {
  return new Housekeeping({
    intervalMs: 60_000,
    agents: h.agents,
    readMemory: () => ({ anonBytes: 0, budgetBytes: null }),
    releaseIdle: () => h.sessions.releaseIdle(),
    maxAgeDays: 0,
    prune: () => Promise.resolve([]),
  });
}

describe('agent cache on local sessions', () => {
  it('a turn after the first is a hit that reads only what is new; the request is what a fresh load gives', async () => {
    h = await startLocalHarness();
    const cached = await h.create('cached');
    const evicted = await h.create('evicted');
    for (const id of [cached, evicted]) {
      expect(await h.turn(id, 'first')).toBe('completed');
      expect(await h.turn(id, 'second')).toBe('completed');
    }
    expect(h.agents.stats()).toMatchObject({ size: 2, misses: 2, hits: 2 });
    // Evicting one of them is soft: its next turn rebuilds from the store (a miss) ...
    expect(h.agents.invalidate(evicted)).toBe(true);
    expect(await h.turn(cached, 'third')).toBe('completed');
    const fromCache = requestBodies(h.demo).at(-1)!;
    expect(await h.turn(evicted, 'third')).toBe('completed');
    const rebuilt = requestBodies(h.demo).at(-1)!;
    expect(h.agents.stats()).toMatchObject({ misses: 3, hits: 3, evictions: { invalidated: 1 } });
    // ... and the model request is byte-identical to the one served from the cache.
    expect(rebuilt).toBe(fromCache);
    expect(lastMessages().map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
    ]);
  });

  it('a transcript changed behind the cache (a rewind) is never served: the entry is rebuilt', async () => {
    h = await startLocalHarness();
    const id = await h.create();
    await h.turn(id, 'keep me');
    await h.turn(id, 'undo me');
    const receipt = h.sessions.validatedReceipt(id)!;
    await h.store.rewindSession(receipt.current_session_id, 1);
    await h.turn(id, 'after the rewind');
    const users = lastMessages()
      .filter((m) => m.role === 'user')
      .map((m) => m.content);
    expect(users).toEqual(['keep me', 'after the rewind']);
    expect(h.agents.stats().evictions.invalidated).toBe(1);
  });

  it("'transcript:replaced' drops the cached copy", async () => {
    h = await startLocalHarness();
    const id = await h.create();
    await h.turn(id, 'hello');
    expect(h.agents.has(id)).toBe(true);
    const receipt = h.sessions.validatedReceipt(id)!;
    h.sessions.events.emit('transcript:replaced', {
      logical_id: id,
      kind: 'rewind',
      session_id: receipt.current_session_id,
    });
    expect(h.agents.has(id)).toBe(false);
    await h.turn(id, 'again');
    expect(h.agents.stats()).toMatchObject({ misses: 2, hits: 0 });
  });

  it('AGC-4: an idle session past its TTL is evicted, keeps its transcript and answers with full history', async () => {
    h = await startLocalHarness({ limits: { idleTtlMs: 3_600_000 } });
    const id = await h.create();
    await h.turn(id, 'remember the number 42');
    await h.turn(id, 'and the colour blue');
    const before = await h.store.loadTranscript(h.sessions.validatedReceipt(id)!.current_session_id);
    h.clock.now += 3_600_001;
    const report = await housekeeping().pass();
    expect(report.ttl_evicted).toBe(1);
    expect(h.agents.has(id)).toBe(false);
    const after = await h.store.loadTranscript(h.sessions.validatedReceipt(id)!.current_session_id);
    expect(after).toEqual(before);
    expect(await h.turn(id, 'what did I say?')).toBe('completed');
    expect(
      lastMessages()
        .filter((m) => m.role === 'user')
        .map((m) => m.content),
    ).toEqual(['remember the number 42', 'and the colour blue', 'what did I say?']);
    expect(h.agents.stats().evictions.ttl).toBe(1);
  });

  it('pressure evicts least recently used idle agents, never the protected recent ones', async () => {
    h = await startLocalHarness({ limits: { protectRecent: 1, maxEvictionsPerPass: 16 } });
    const ids = [await h.create('a'), await h.create('b'), await h.create('c')];
    for (const id of ids) {
      h.clock.now += 1000;
      await h.turn(id, `hello ${id}`);
    }
    const victims = h.agents.sweepPressure({ anonBytes: 10 ** 12, budgetBytes: 1 });
    expect(victims).toEqual([ids[0], ids[1]]);
    expect(h.agents.keys()).toEqual([ids[2]]);
    expect(h.agents.stats().evictions.pressure).toBe(2);
  });
});

describe('idle sessions release their in-memory state', () => {
  it('a released hub is rebuilt on demand; an old cursor gets snapshot_required, never a gap', async () => {
    h = await startLocalHarness();
    const id = await h.create();
    await h.turn(id, 'hello');
    const cursor = (await h.sessions.eventsSince(h.owner, id, h.sessions.epoch, 0)) as { last_seq: number };
    expect(cursor.last_seq).toBeGreaterThan(2);
    expect(h.sessions.releaseIdle()).toBe(1);
    expect(h.sessions.hubCount).toBe(0);
    // Nothing happened since: the viewer's cursor is current and gets no events.
    expect(await h.sessions.eventsSince(h.owner, id, h.sessions.epoch, cursor.last_seq)).toMatchObject({
      last_seq: cursor.last_seq,
      events: [],
    });
    await h.turn(id, 'again');
    // Numbering went on after the released hub; a cursor into what it held needs a snapshot.
    const later = (await h.sessions.eventsSince(h.owner, id, h.sessions.epoch, cursor.last_seq)) as {
      events: { seq: number }[];
    };
    expect(later.events[0]!.seq).toBe(cursor.last_seq + 1);
    await expect(h.sessions.eventsSince(h.owner, id, h.sessions.epoch, 1)).rejects.toThrow(
      /no longer buffered/,
    );
  });

  it('the replay buffer is capped in bytes: large tool outputs do not pile up per session', async () => {
    h = await startLocalHarness({ replayMaxBytes: 4096 });
    const id = await h.create();
    for (let i = 0; i < 3; i++) await h.turn(id, `${'long text '.repeat(200)} ${i}`);
    // The oldest events were dropped by the byte cap (each turn echoes ~2 KB back): a cursor from
    // the start needs a snapshot, a recent one still gets what it missed.
    let refused: GatewayError | null = null;
    try {
      await h.sessions.eventsSince(h.owner, id, h.sessions.epoch, 0);
    } catch (error) {
      refused = error as GatewayError;
    }
    expect(refused?.reason).toBe('snapshot_required');
    const { last_seq: last, oldest_seq: oldest } = refused!.details as {
      last_seq: number;
      oldest_seq: number;
    };
    expect(oldest).toBeGreaterThan(1);
    const recent = (await h.sessions.eventsSince(h.owner, id, h.sessions.epoch, oldest - 1)) as {
      events: { event: unknown }[];
    };
    expect(recent.events).toHaveLength(last - oldest + 1);
    expect(JSON.stringify(recent.events.map((e) => e.event)).length).toBeLessThanOrEqual(4096 + 200);
  });

  it('a compression inside a turn drops the cached agent; the next turn is built from the compressed transcript', async () => {
    const compression = { window: 1_000_000, threshold: 0.75, tailTokens: 60 };
    h = await startLocalHarness({ compression });
    const id = await h.create();
    for (let i = 0; i < 4; i++)
      expect(await h.turn(id, `${'words to fill the window '.repeat(20)} ${i}`)).toBe('completed');
    expect(h.agents.has(id)).toBe(true);
    const before = h.sessions.validatedReceipt(id)!.current_session_id;
    const compressed = h.sessions.events.next('transcript:replaced', (e) => e.logical_id === id);
    // The window shrinks: the next turn compresses before its model call.
    compression.window = 1200;
    expect(await h.turn(id, 'after the squeeze')).toBe('completed');
    await compressed;
    const after = h.sessions.validatedReceipt(id)!.current_session_id;
    expect(after).not.toBe(before);
    // The turn went on with the compressed view, and the cache kept nothing of the old transcript.
    expect(h.agents.has(id)).toBe(false);
    const squeezed = lastMessages();
    expect(squeezed.length).toBeLessThan(1 + 2 * 5);
    compression.window = 1_000_000;
    const misses = h.agents.stats().misses;
    expect(await h.turn(id, 'and once more')).toBe('completed');
    expect(h.agents.stats().misses).toBe(misses + 1);
    // The next request is the stored child transcript (what a fresh load gives) up to this turn's
    // answer, not the old one.
    const stored = await h.store.loadTranscript(after);
    expect(
      lastMessages()
        .slice(1)
        .map((m) => m.content),
    ).toEqual(stored.slice(0, -1).map((m) => m.content));
  });
});
