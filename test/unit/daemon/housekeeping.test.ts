import { describe, expect, it } from 'vitest';
import { AgentCache } from '../../../src/domain/agents/agent-cache.js';
import { DEFAULT_LIMITS } from '../../../src/domain/agents/cache-policy.js';
import { Housekeeping, PRUNE_INTERVAL_MS } from '../../../src/daemon/housekeeping.js';
import type { SessionStore } from '../../../src/domain/ports/session-store.js';

/** A housekeeping watcher whose prune step records each call; nothing else is under test here. */
function watcher(maxAgeDays: number) {
  let clock = 1_000_000;
  const pruneCalls: number[] = [];
  const housekeeping = new Housekeeping({
    intervalMs: 60_000,
    // The cache is empty: its sweeps find nothing, so the store it reads from is never asked.
    agents: new AgentCache({ source: {} as SessionStore, limits: DEFAULT_LIMITS }),
    readMemory: () => ({ anonBytes: 0, budgetBytes: null }),
    releaseIdle: () => 0,
    maxAgeDays,
    prune: (days) => {
      pruneCalls.push(days);
      return Promise.resolve([`agent:main:telegram:dm:${pruneCalls.length}`]);
    },
    now: () => clock,
  });
  return { housekeeping, pruneCalls, advance: (ms: number) => (clock += ms) };
}

describe('housekeeping: routing entries older than sessions.max_age_days', () => {
  it('are never pruned with the default 0', async () => {
    const w = watcher(0);
    for (let i = 0; i < 3; i++) {
      expect((await w.housekeeping.pass()).pruned).toBeNull();
      w.advance(PRUNE_INTERVAL_MS);
    }
    expect(w.pruneCalls).toEqual([]);
  });

  it('are pruned on the first pass, then at most once an hour, with the configured age', async () => {
    const w = watcher(30);
    expect((await w.housekeeping.pass()).pruned).toEqual(['agent:main:telegram:dm:1']);
    w.advance(PRUNE_INTERVAL_MS - 1);
    expect((await w.housekeeping.pass()).pruned).toBeNull();
    w.advance(1);
    expect((await w.housekeeping.pass()).pruned).toEqual(['agent:main:telegram:dm:2']);
    expect(w.pruneCalls).toEqual([30, 30]);
  });
});

describe('housekeeping: the cluster’s shared event stream', () => {
  it('is trimmed on every pass in cluster mode, and not asked about otherwise', async () => {
    const calls: number[] = [];
    const base = {
      intervalMs: 60_000,
      agents: new AgentCache({ source: {} as SessionStore, limits: DEFAULT_LIMITS }),
      readMemory: () => ({ anonBytes: 0, budgetBytes: null }),
      releaseIdle: () => 0,
      maxAgeDays: 0,
      prune: () => Promise.resolve([]),
    };
    const clustered = new Housekeeping({
      ...base,
      pruneEvents: () => (calls.push(calls.length + 1), Promise.resolve(7)),
    });
    expect((await clustered.pass()).events_pruned).toBe(7);
    expect((await clustered.pass()).events_pruned).toBe(7);
    expect(calls).toEqual([1, 2]);
    expect((await new Housekeeping(base).pass()).events_pruned).toBeNull();
  });
});
