import { describe, expect, it } from 'vitest';
import { Semaphore } from '../../../src/domain/concurrency/semaphore.js';
import { TypedEmitter } from '../../../src/domain/events/typed-emitter.js';

describe('Semaphore', () => {
  it('never lets more than its capacity in, and serves waiters in order', async () => {
    const sem = new Semaphore(2);
    const order: number[] = [];
    let inside = 0;
    let peak = 0;
    await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const release = await sem.acquire();
        order.push(i);
        inside++;
        peak = Math.max(peak, inside);
        await Promise.resolve();
        inside--;
        release();
        release();
      }),
    );
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(sem.inUse).toBe(0);
  });
  it('acquireUnless gives up its place when its signal aborts, and the next waiter is served', async () => {
    const sem = new Semaphore(1);
    const first = await sem.acquire();
    const abort = new AbortController();
    const gaveUp = sem.acquireUnless(abort.signal);
    const next = sem.acquire();
    expect(sem.waiting).toBe(2);
    abort.abort();
    expect(await gaveUp).toBeNull();
    expect(sem.waiting).toBe(1);
    first();
    const release = await next;
    expect(sem.inUse).toBe(1);
    release();
    expect(sem.inUse).toBe(0);
    const held = await sem.acquireUnless(new AbortController().signal);
    expect(held).not.toBeNull();
    expect(sem.inUse).toBe(1);
    held!();
    expect(await sem.acquireUnless(AbortSignal.abort())).toBeNull();
    expect(sem.inUse).toBe(0);
  });
  it('rejects a non-positive capacity', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
  });
});

describe('TypedEmitter', () => {
  it('resolves next() with the first matching event', async () => {
    const events = new TypedEmitter<{ tick: number }>();
    const waiting = events.next('tick', (n) => n > 1);
    events.emit('tick', 1);
    events.emit('tick', 2);
    await expect(waiting).resolves.toBe(2);
  });
  it('rejects next() after its timeout', async () => {
    const events = new TypedEmitter<{ tick: number }>();
    await expect(events.next('tick', () => true, 5)).rejects.toThrow(/waiting for tick/);
  });
});
