import { describe, expect, it } from 'vitest';
import {
  CHEAP_FLUSH_US,
  chooseFlushPlace,
  FIRST_FLUSH,
  PROBE_EVERY,
  PROBE_POOL_US,
  recordFlush,
  STRIKES,
  type FlushHistory,
} from '../../../src/storage/sqlite/flush-policy.js';

/** Runs `n` flushes where the policy says, each inline one costing `costUs`; returns the places. */
function run(history: FlushHistory, n: number, costUs: number): { places: string[]; history: FlushHistory } {
  const places: string[] = [];
  for (let i = 0; i < n; i++) {
    const place = chooseFlushPlace(history);
    places.push(place);
    history = recordFlush(history, place, costUs);
  }
  return { places, history };
}

describe('where a log flush runs', () => {
  it('stays inline while flushes are cheap', () => {
    expect(new Set(run(FIRST_FLUSH, 50, CHEAP_FLUSH_US).places)).toEqual(new Set(['inline']));
  });

  it('moves to the pool after STRIKES expensive inline flushes in a row, not after one', () => {
    let history = recordFlush(FIRST_FLUSH, 'inline', 10 * CHEAP_FLUSH_US);
    history = recordFlush(history, 'inline', 1); // a cheap one forgives the strike
    expect(run(history, STRIKES - 1, 10 * CHEAP_FLUSH_US).history.place).toBe('inline');
    const { places } = run(FIRST_FLUSH, STRIKES + 5, 10 * CHEAP_FLUSH_US);
    expect(places).toEqual([...Array<string>(STRIKES).fill('inline'), ...Array<string>(5).fill('pool')]);
  });

  it('probes inline once every PROBE_EVERY pool flushes, and comes back when the probe is cheap', () => {
    const slow = run(FIRST_FLUSH, STRIKES, 10 * CHEAP_FLUSH_US).history;
    const { places, history } = run(slow, PROBE_EVERY + 1, 10 * CHEAP_FLUSH_US);
    expect(places.filter((p) => p === 'inline')).toHaveLength(1);
    expect(places[PROBE_EVERY]).toBe('inline');
    expect(history.place).toBe('pool'); // the probe was expensive too

    const afterPool = run(slow, PROBE_EVERY, 0).history; // pool flushes report no cost
    expect(chooseFlushPlace(afterPool)).toBe('inline');
    expect(recordFlush(afterPool, 'inline', 1)).toEqual(FIRST_FLUSH);
  });

  it('does not probe inline while the pool’s flushes take longer than PROBE_POOL_US', () => {
    const slow = run(FIRST_FLUSH, STRIKES, 10 * CHEAP_FLUSH_US).history;
    // An inline probe would hold the event loop about as long as these pool flushes took.
    const { places, history } = run(slow, 3 * PROBE_EVERY, PROBE_POOL_US + 1);
    expect(places.filter((p) => p === 'inline')).toHaveLength(0);
    // Once a pool flush is quick again, the overdue probe runs at the next flush.
    expect(chooseFlushPlace(recordFlush(history, 'pool', PROBE_POOL_US))).toBe('inline');
  });
});
