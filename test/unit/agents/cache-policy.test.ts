import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  byRecency,
  capacityVictims,
  PRESSURE_HEADROOM,
  pressureVictims,
  ttlVictims,
  type CacheLimits,
  type EntryFacts,
} from '../../../src/domain/agents/cache-policy.js';

const entry = fc.record({
  lastUsedMs: fc.integer({ min: 0, max: 10_000 }),
  busy: fc.boolean(),
  flushed: fc.boolean(),
  bytes: fc.integer({ min: 0, max: 1_000_000 }),
});
const entries = fc
  .array(entry, { maxLength: 40 })
  .map((list) => list.map((e, i): EntryFacts => ({ ...e, key: `s${i}` })));
const limits = fc.record({
  maxSize: fc.integer({ min: 0, max: 50 }),
  idleTtlMs: fc.integer({ min: 0, max: 10_000 }),
  maxEvictionsPerPass: fc.integer({ min: 0, max: 20 }),
  protectRecent: fc.integer({ min: 0, max: 20 }),
});

const byKey = (list: readonly EntryFacts[]) => new Map(list.map((e) => [e.key, e]));

/** Victims are distinct, evictable, and the least recently used of the eligible ones, in order. */
function expectLruPrefix(victims: string[], eligible: EntryFacts[]): void {
  expect(new Set(victims).size).toBe(victims.length);
  expect(victims).toEqual(
    byRecency(eligible)
      .slice(0, victims.length)
      .map((e) => e.key),
  );
}

describe('agent cache policy (AGC-1, AGC-2)', () => {
  it('LRU: leaves at most max_size once enough entries are evictable, taking the oldest first', () => {
    fc.assert(
      fc.property(entries, limits, fc.integer({ min: 0, max: 2 }), (list, lim, incoming) => {
        const victims = capacityVictims(list, lim, incoming);
        const eligible = list.filter((e) => !e.busy && e.flushed);
        expectLruPrefix(victims, eligible);
        const excess = Math.max(0, list.length + incoming - lim.maxSize);
        expect(victims.length).toBe(Math.min(excess, eligible.length));
      }),
    );
  });

  it('TTL: exactly the evictable entries idle past the TTL; 0 disables', () => {
    fc.assert(
      fc.property(entries, limits, fc.integer({ min: 0, max: 20_000 }), (list, lim, now) => {
        const victims = ttlVictims(list, lim, now);
        const expected =
          lim.idleTtlMs === 0
            ? []
            : list.filter((e) => !e.busy && e.flushed && now - e.lastUsedMs > lim.idleTtlMs);
        expect(new Set(victims)).toEqual(new Set(expected.map((e) => e.key)));
        const facts = byKey(list);
        for (const key of victims) expect(facts.get(key)!.busy).toBe(false);
      }),
    );
  });

  it('pressure: never mid-turn, unflushed or among the protect_recent most recent; at most max per pass', () => {
    fc.assert(
      fc.property(
        entries,
        limits,
        fc.integer({ min: 0, max: 5_000_000 }),
        fc.integer({ min: 0, max: 5_000_000 }),
        (list, lim, anon, budget) => {
          const victims = pressureVictims(list, lim, { anonBytes: anon, budgetBytes: budget });
          if (anon <= budget) {
            expect(victims).toEqual([]);
            return;
          }
          const ordered = byRecency(list);
          const protectedKeys = new Set(
            ordered.slice(Math.max(0, ordered.length - lim.protectRecent)).map((e) => e.key),
          );
          const facts = byKey(list);
          expect(victims.length).toBeLessThanOrEqual(lim.maxEvictionsPerPass);
          for (const key of victims) {
            const e = facts.get(key)!;
            expect(e.busy).toBe(false);
            expect(e.flushed).toBe(true);
            expect(protectedKeys.has(key)).toBe(false);
          }
          const eligible = ordered.filter((e) => !e.busy && e.flushed && !protectedKeys.has(e.key));
          expectLruPrefix(victims, eligible);
          // It stops once the estimate covers the excess and the headroom below the budget, and
          // only then (or at the cap, or out of candidates).
          const target = anon - budget + budget * PRESSURE_HEADROOM;
          const freed = victims.reduce((sum, key) => sum + facts.get(key)!.bytes, 0);
          const beforeLast = freed - (victims.length > 0 ? facts.get(victims.at(-1)!)!.bytes : 0);
          expect(beforeLast).toBeLessThan(target);
          if (victims.length < Math.min(lim.maxEvictionsPerPass, eligible.length)) {
            expect(freed).toBeGreaterThanOrEqual(target);
          }
        },
      ),
    );
  });

  it('pressure is off without a budget', () => {
    const list: EntryFacts[] = [{ key: 'a', lastUsedMs: 0, busy: false, flushed: true, bytes: 1 }];
    const lim: CacheLimits = { maxSize: 1, idleTtlMs: 1, maxEvictionsPerPass: 16, protectRecent: 0 };
    expect(pressureVictims(list, lim, { anonBytes: 10 ** 12, budgetBytes: null })).toEqual([]);
    expect(pressureVictims(list, lim, { anonBytes: 2, budgetBytes: 1 })).toEqual(['a']);
  });
});
