import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Ticker, type TickWhileRunning } from '../../../src/domain/concurrency/ticker.js';

/** A ticker whose passes the test ends by hand: `passes` counts them, `finish()` ends the running one. */
function harness(whileRunning: TickWhileRunning, intervalMs = 1000) {
  const ends: (() => void)[] = [];
  const errors: unknown[] = [];
  let passes = 0;
  let failNext: Error | null = null;
  const ticker = new Ticker({
    intervalMs,
    whileRunning,
    pass: () => {
      passes++;
      if (failNext) {
        const error = failNext;
        failNext = null;
        return Promise.reject(error);
      }
      return new Promise<void>((resolve) => ends.push(resolve));
    },
    onError: (error) => errors.push(error),
  });
  return {
    ticker,
    errors,
    get passes() {
      return passes;
    },
    failNextPass(error: Error) {
      failNext = error;
    },
    /** Ends the pass running now and lets the ticker's follow-up (if any) start. */
    async finish() {
      const end = ends.shift();
      if (!end) throw new Error('no pass is running');
      end();
      await vi.advanceTimersByTimeAsync(0);
    },
  };
}

describe('Ticker', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('start runs a pass at once, then one per interval, never two at once', async () => {
    const t = harness('join');
    t.ticker.start();
    expect(t.passes).toBe(1);
    // The interval comes round while the first pass runs: it joins it.
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.passes).toBe(1);
    await t.finish();
    await vi.advanceTimersByTimeAsync(1000);
    expect(t.passes).toBe(2);
    await t.finish();
    await t.ticker.stop();
  });

  it('refuses to start twice, or after stop', async () => {
    const t = harness('join');
    t.ticker.start();
    expect(() => t.ticker.start()).toThrow(/already started/);
    await t.finish();
    await t.ticker.stop();
    expect(() => t.ticker.start()).toThrow(/stopped/);
  });

  it("'again': ticks asked during a pass bring exactly one more pass after it", async () => {
    const t = harness('again');
    const first = t.ticker.tick();
    const asked = [t.ticker.tick(), t.ticker.tick(), t.ticker.tick()];
    expect(t.passes).toBe(1);
    await t.finish();
    await Promise.all([first, ...asked]);
    expect(t.passes).toBe(2);
    await t.finish();
    expect(t.passes).toBe(2);
    await t.ticker.stop();
  });

  it("'join': a tick asked during a pass waits for it and starts none", async () => {
    const t = harness('join');
    const first = t.ticker.tick();
    let joinedEnded = false;
    const joined = t.ticker.tick().then(() => (joinedEnded = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(joinedEnded).toBe(false);
    await t.finish();
    await Promise.all([first, joined]);
    expect(joinedEnded).toBe(true);
    expect(t.passes).toBe(1);
    // The next tick after the pass starts a new one.
    const next = t.ticker.tick();
    expect(t.passes).toBe(2);
    await t.finish();
    await next;
  });

  it('stop while a pass runs waits for it, and no pass follows, asked for or not', async () => {
    const t = harness('again', 1000);
    t.ticker.start();
    void t.ticker.tick(); // asks for a follow-up
    let stopped = false;
    const stopping = t.ticker.stop().then(() => (stopped = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(stopped).toBe(false);
    expect(t.ticker.stopped).toBe(true);
    await t.finish();
    await stopping;
    expect(stopped).toBe(true);
    expect(t.passes).toBe(1);
    // Neither the interval nor a tick starts another.
    await vi.advanceTimersByTimeAsync(5000);
    await t.ticker.tick();
    expect(t.passes).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('a tick after stop starts nothing', async () => {
    const t = harness('again');
    await t.ticker.stop();
    await t.ticker.tick();
    expect(t.passes).toBe(0);
  });

  it('a failing pass goes to onError and the ticker goes on', async () => {
    const t = harness('join');
    t.failNextPass(new Error('store down'));
    await t.ticker.tick();
    expect(t.errors).toEqual([new Error('store down')]);
    const next = t.ticker.tick();
    expect(t.passes).toBe(2);
    await t.finish();
    await next;
  });

  it('a pass that throws before its first await is caught as well', async () => {
    const errors: unknown[] = [];
    const ticker = new Ticker({
      intervalMs: 1000,
      whileRunning: 'join',
      pass: () => {
        throw new Error('at once');
      },
      onError: (error) => errors.push(error),
    });
    await ticker.tick();
    expect(errors).toEqual([new Error('at once')]);
  });
});
