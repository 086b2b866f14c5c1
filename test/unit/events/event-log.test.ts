import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeltaCoalescer, type CoalescerTimers } from '../../../src/domain/events/coalescer.js';
import { SessionEventLog } from '../../../src/domain/events/event-log.js';

describe('LOC-11 session event log', () => {
  it('numbers events per session from 1 and replays what a viewer missed', () => {
    const log = new SessionEventLog<string>(7, 4);
    for (const e of ['a', 'b', 'c']) log.append(e);
    const replay = log.since(7, 1);
    expect(replay).toEqual({
      kind: 'events',
      last_seq: 3,
      events: [
        { seq: 2, epoch: 7, event: 'b' },
        { seq: 3, epoch: 7, event: 'c' },
      ],
    });
    expect(log.since(7, 3)).toEqual({ kind: 'events', events: [], last_seq: 3 });
  });

  it('answers snapshot_required when the gap is older than the buffer', () => {
    const log = new SessionEventLog<number>(1, 4);
    for (let i = 0; i < 10; i++) log.append(i);
    expect(log.oldest).toBe(7);
    expect(log.since(1, 5)).toMatchObject({ kind: 'snapshot_required', reason: 'gap', oldest_seq: 7 });
    expect(log.since(1, 6)).toMatchObject({ kind: 'events', last_seq: 10 });
  });

  it('answers snapshot_required for a cursor from another epoch or from the future', () => {
    const log = new SessionEventLog<number>(2, 4);
    log.append(1);
    expect(log.since(1, 0)).toMatchObject({ kind: 'snapshot_required', reason: 'epoch' });
    expect(log.since(2, 5)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });
  });

  it('holds slots only for what was published, never more than its capacity', () => {
    // Every viewed session has a log: an idle one must not carry a preallocated ring.
    const log = new SessionEventLog<number>(1, 2048);
    expect(log.slots).toBe(0);
    for (let i = 1; i <= 3; i++) log.append(i);
    expect(log.slots).toBe(3);
    for (let i = 4; i <= 2100; i++) log.append(i);
    expect(log.slots).toBe(2048);
    expect(log.since(1, 2090)).toMatchObject({ kind: 'events', last_seq: 2100 });
    expect(log.oldest).toBe(53);
  });

  it('is capped in bytes as well as in count: the oldest events go first', () => {
    const log = new SessionEventLog<string>(1, 100, { maxBytes: 1000, sizeOf: (e) => e.length });
    for (let i = 0; i < 10; i++) log.append('x'.repeat(300));
    expect(log.slots).toBe(3);
    expect(log.retainedBytes).toBe(900);
    expect(log.oldest).toBe(8);
    expect(log.since(1, 6)).toMatchObject({ kind: 'snapshot_required', reason: 'gap', oldest_seq: 8 });
    expect(log.since(1, 7)).toMatchObject({ kind: 'events', last_seq: 10 });
    // One event larger than the cap is not kept at all: a viewer that missed it needs a snapshot.
    log.append('y'.repeat(5000));
    expect(log.slots).toBe(0);
    expect(log.since(1, 10)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });
    expect(log.since(1, 11)).toEqual({ kind: 'events', events: [], last_seq: 11 });
  });

  it('a rebuilt log numbers on after the one it replaces; older cursors get snapshot_required', () => {
    const log = new SessionEventLog<string>(1, 16, { startAfter: 40 });
    expect(log.since(1, 40)).toEqual({ kind: 'events', events: [], last_seq: 40 });
    expect(log.since(1, 39)).toMatchObject({ kind: 'snapshot_required', reason: 'gap' });
    expect(log.append('a').seq).toBe(41);
    expect(log.since(1, 40)).toMatchObject({ kind: 'events', events: [{ seq: 41, event: 'a' }] });
    expect(log.since(1, 12)).toMatchObject({ kind: 'snapshot_required', reason: 'gap', oldest_seq: 41 });
  });

  it('with a byte cap and a restart point, any cursor still gets every later event or a snapshot', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 60 }),
        fc.nat(20),
        fc.nat(90),
        (cap, sizes, start, cursor) => {
          const log = new SessionEventLog<number>(1, cap, {
            maxBytes: 100,
            sizeOf: (e) => e,
            startAfter: start,
          });
          for (const size of sizes) log.append(size);
          const last = start + sizes.length;
          const result = log.since(1, cursor);
          if (result.kind === 'events') {
            expect(result.events.map((e) => e.seq)).toEqual(
              Array.from({ length: last - cursor }, (_, i) => cursor + 1 + i),
            );
            expect(cursor).toBeGreaterThanOrEqual(start);
          } else {
            expect(cursor > last || cursor + 1 < (log.oldest ?? 1)).toBe(true);
          }
          expect(log.retainedBytes).toBeLessThanOrEqual(100);
        },
      ),
    );
  });

  it('never returns a silent hole: any cursor gets every later event or a snapshot answer', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 16 }),
        fc.integer({ min: 0, max: 60 }),
        fc.nat(70),
        (cap, n, cursor) => {
          const log = new SessionEventLog<number>(1, cap);
          for (let i = 1; i <= n; i++) log.append(i);
          const result = log.since(1, cursor);
          if (result.kind === 'events') {
            expect(result.events.map((e) => e.seq)).toEqual(
              Array.from({ length: n - cursor }, (_, i) => cursor + 1 + i),
            );
          } else {
            expect(cursor > n || cursor + 1 < (log.oldest ?? 1)).toBe(true);
          }
        },
      ),
    );
  });
});

class ManualTimers implements CoalescerTimers {
  fns = new Map<number, () => void>();
  next = 1;
  setTimeout(fn: () => void): unknown {
    const id = this.next++;
    this.fns.set(id, fn);
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.fns.delete(handle as number);
  }
  fire(): void {
    const fns = [...this.fns.values()];
    this.fns.clear();
    for (const fn of fns) fn();
  }
}

type E = { type: string; text?: string };

describe('LOC-11 delta coalescing', () => {
  it('merges consecutive deltas of one kind and keeps order with other events', () => {
    const out: E[] = [];
    const timers = new ManualTimers();
    const c = new DeltaCoalescer<E>((e) => out.push(e), {
      deltaTypes: ['text.delta', 'reasoning.delta'],
      intervalMs: 20,
      timers,
    });
    c.push({ type: 'reasoning.delta', text: 'hm' });
    c.push({ type: 'text.delta', text: 'Hel' });
    c.push({ type: 'text.delta', text: 'lo' });
    c.push({ type: 'tool.start' });
    c.push({ type: 'text.delta', text: '!' });
    expect(out).toEqual([
      { type: 'reasoning.delta', text: 'hm' },
      { type: 'text.delta', text: 'Hello' },
      { type: 'tool.start' },
    ]);
    timers.fire();
    expect(out.at(-1)).toEqual({ type: 'text.delta', text: '!' });
  });

  it('loses no text for any sequence of deltas', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.string(), fc.constant(null))), (items) => {
        const out: E[] = [];
        const c = new DeltaCoalescer<E>((e) => out.push(e), {
          deltaTypes: ['text.delta'],
          intervalMs: 50,
          timers: new ManualTimers(),
        });
        for (const item of items)
          c.push(item === null ? { type: 'other' } : { type: 'text.delta', text: item });
        c.flush();
        const text = (es: E[]) => es.map((e) => (e.type === 'other' ? '|' : e.text)).join('');
        expect(text(out)).toBe(
          text(items.map((i) => (i === null ? { type: 'other' } : { type: 'text.delta', text: i }))),
        );
      }),
    );
  });
});
