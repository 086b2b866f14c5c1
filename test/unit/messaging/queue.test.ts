import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  arrive,
  clearForReset,
  emptyQueue,
  finish,
  putBack,
  queueDepth,
  resume,
  stop,
  type QueueItem,
  type SessionQueueState,
} from '../../../src/domain/messaging/queue.js';

interface Ev {
  id: number;
  /** The session generation the event arrived in (bumped by /new). */
  generation: number;
}

type Op =
  | { op: 'send' }
  | { op: 'queue' }
  | { op: 'wake' }
  | { op: 'stop' }
  | { op: 'new' }
  | { op: 'finish' }
  | { op: 'bounce' };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.constant({ op: 'send' } as const),
  fc.constant({ op: 'queue' } as const),
  fc.constant({ op: 'wake' } as const),
  fc.constant({ op: 'stop' } as const),
  fc.constant({ op: 'new' } as const),
  fc.constant({ op: 'finish' } as const),
  fc.constant({ op: 'bounce' } as const),
);

function simulate(ops: Op[]) {
  let state: SessionQueueState<Ev> = emptyQueue();
  let running: QueueItem<Ev> | null = null;
  let generation = 0;
  let nextId = 0;
  const started: QueueItem<Ev>[] = [];
  const queuedSent: QueueItem<Ev>[] = [];
  const cleared = new Set<number>();
  const wakes: number[] = [];
  const violations: string[] = [];
  // A bounce happens at promotion, before the event's turn begins: only right after a start.
  let justStarted = false;

  const begin = (item: QueueItem<Ev> | null) => {
    if (item === null) return;
    if (running !== null) violations.push('two events running');
    if (item.kind !== 'internal' && item.payload.generation !== generation) {
      violations.push(`event ${item.payload.id} of an old session ran after /new`);
    }
    running = item;
    justStarted = true;
    started.push(item);
  };
  const arriveItem = (kind: QueueItem<Ev>['kind']) => {
    const item = { kind, payload: { id: nextId++, generation } };
    if (kind === 'queued') queuedSent.push(item);
    if (kind === 'internal') wakes.push(item.payload.id);
    const step = arrive(state, item);
    state = step.state;
    begin(step.start);
  };

  for (const { op } of ops) {
    const bounceable = justStarted;
    justStarted = false;
    switch (op) {
      case 'send':
        arriveItem('message');
        break;
      case 'queue':
        arriveItem('queued');
        break;
      case 'wake':
        arriveItem('internal');
        break;
      case 'stop':
        state = stop(state);
        break;
      case 'new':
        for (const item of [state.slot, ...state.overflow]) {
          if (item && item.kind !== 'internal') cleared.add(item.payload.id);
        }
        state = clearForReset(state);
        generation++;
        // The command's own handling: if idle, what survived (wake-ups) starts right after it.
        if (running === null) {
          const step = resume(state);
          state = step.state;
          begin(step.start);
        }
        break;
      case 'finish':
        if (running === null) break;
        running = null;
        {
          const step = finish(state);
          state = step.state;
          begin(step.start);
        }
        break;
      case 'bounce':
        // No adapter could take the running event: it goes back, then is retried.
        if (running === null || !bounceable) break;
        started.pop();
        state = putBack(state, running);
        running = null;
        {
          const step = resume(state);
          state = step.state;
          begin(step.start);
        }
        break;
    }
    const followUps = [state.slot, ...state.overflow].filter((i) => i?.kind === 'message').length;
    if (followUps > 1) violations.push('more than one follow-up waiting');
    if (state.mode === 'idle' && queueDepth(state) > 0) violations.push('idle with waiting events');
  }
  // Drain: let every remaining turn finish.
  while (running !== null) {
    running = null;
    const step = finish(state);
    state = step.state;
    begin(step.start);
  }
  return { started, queuedSent, cleared, wakes, violations };
}

describe('QUE-1..3 per-session queue', () => {
  it('keeps its invariants for any interleaving of sends, /queue, /stop, /new and wake-ups', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const { started, queuedSent, cleared, wakes, violations } = simulate(ops);
        expect(violations).toEqual([]);
        const startedIds = started.map((s) => s.payload.id);
        expect(new Set(startedIds).size).toBe(startedIds.length);
        // Every /queue item runs exactly once, in order, unless /new cleared it first.
        const expectedQueued = queuedSent.map((q) => q.payload.id).filter((id) => !cleared.has(id));
        const queuedIds = new Set(queuedSent.map((q) => q.payload.id));
        const ranQueued = started.map((s) => s.payload.id).filter((id) => queuedIds.has(id));
        expect(ranQueued).toEqual(expectedQueued);
        // Wake-ups are never lost and run in arrival order.
        expect(started.filter((s) => s.kind === 'internal').map((s) => s.payload.id)).toEqual(wakes);
      }),
      { numRuns: 500 },
    );
  });

  it('collapses a burst of follow-ups into the newest one', () => {
    let state = arrive(emptyQueue<string>(), { kind: 'message', payload: 'first' }).state;
    for (const text of ['a', 'b', 'c']) state = arrive(state, { kind: 'message', payload: text }).state;
    expect(queueDepth(state)).toBe(1);
    expect(finish(state).start).toEqual({ kind: 'message', payload: 'c' });
  });

  it('/stop drops the follow-up but keeps queued items and wake-ups, which run next', () => {
    let state = arrive(emptyQueue<string>(), { kind: 'message', payload: 'running' }).state;
    state = arrive(state, { kind: 'message', payload: 'follow-up' }).state;
    state = arrive(state, { kind: 'internal', payload: 'wake' }).state;
    state = arrive(state, { kind: 'queued', payload: 'q1' }).state;
    state = stop(state);
    const step = finish(state);
    expect(step.start?.payload).toBe('wake');
    expect(finish(step.state).start?.payload).toBe('q1');
  });

  it('a put-back event runs before anything that arrived later', () => {
    const first = arrive(emptyQueue<string>(), { kind: 'queued', payload: 'q1' });
    let state = arrive(first.state, { kind: 'queued', payload: 'q2' }).state;
    state = putBack(state, first.start!);
    expect(state.mode).toBe('idle');
    const step = arrive(state, { kind: 'message', payload: 'later' });
    expect(step.start?.payload).toBe('q1');
    expect(finish(step.state).start?.payload).toBe('q2');
  });
});
