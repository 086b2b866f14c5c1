/**
 * The agent cache sweeps for memory pressure as it grows (issue 11, AGC-2), not only on the
 * housekeeping interval: a fill faster than the interval is evicted while it happens, with one
 * memory reading per `pressureCheckBytes` cached, under the same protections as a pass.
 */
import { describe, expect, it } from 'vitest';
import { AgentCache, type TranscriptSource } from '../../../src/domain/agents/agent-cache.js';
import { DEFAULT_LIMITS, type MemoryReading } from '../../../src/domain/agents/cache-policy.js';
import type { StoredMessage } from '../../../src/domain/ports/session-store.js';

/** Every session holds 50 messages of 10,000 characters (about 1 MB of estimate each). */
const source: TranscriptSource = {
  loadTranscriptTail: (_sessionId, afterId) =>
    Promise.resolve({
      messages:
        afterId > 0
          ? []
          : Array.from(
              { length: 50 },
              (_, i): StoredMessage =>
                ({ id: i + 1, role: 'user', content: 'x'.repeat(10_000) }) as StoredMessage,
            ),
      anchored: true,
      edits: 0,
    }),
};

const setup = { systemPrompt: 'test', tools: [] };

async function fill(cache: AgentCache, sessions: number): Promise<void> {
  for (let i = 0; i < sessions; i++) (await cache.acquire(`s${i}`, `p${i}`, setup)).release();
}

describe('pressure checked on insert', () => {
  it('evicts during a fast fill over budget, reading memory once per pressureCheckBytes', async () => {
    let readings = 0;
    const over = (): MemoryReading => {
      readings++;
      return { anonBytes: 2_000_000_000, budgetBytes: 1_000_000_000 };
    };
    const cache = new AgentCache({
      source,
      limits: { ...DEFAULT_LIMITS, maxSize: 1000 },
      readMemory: over,
      pressureCheckBytes: 4 * 1024 * 1024,
    });
    await fill(cache, 40);
    const stats = cache.stats();
    expect(stats.evictions.pressure).toBeGreaterThan(0);
    // Never the protect_recent most recent ones.
    expect(stats.size).toBeGreaterThanOrEqual(DEFAULT_LIMITS.protectRecent);
    // About 1 MB per session, a reading per 4 MiB: far fewer readings than inserts.
    expect(readings).toBeGreaterThan(0);
    expect(readings).toBeLessThanOrEqual(40 / 3);
  });

  it('does nothing under budget or without a reading (the housekeeping pass alone then)', async () => {
    const under = new AgentCache({
      source,
      limits: { ...DEFAULT_LIMITS, maxSize: 1000 },
      readMemory: () => ({ anonBytes: 1, budgetBytes: 1_000_000_000 }),
      pressureCheckBytes: 1,
    });
    await fill(under, 20);
    expect(under.stats()).toMatchObject({ size: 20, evictions: { pressure: 0 } });
    const none = new AgentCache({ source, limits: { ...DEFAULT_LIMITS, maxSize: 1000 } });
    await fill(none, 20);
    expect(none.stats()).toMatchObject({ size: 20, evictions: { pressure: 0 } });
  });

  it('reclaims after a sweep that evicted, before the next reading, and only then', async () => {
    const log: (number | 'reclaim')[] = [];
    let anon = 2_000_000_000;
    const cache: AgentCache = new AgentCache({
      source,
      limits: { ...DEFAULT_LIMITS, maxSize: 1000 },
      // Each reading logs the pressure evictions so far.
      readMemory: () => {
        log.push(cache.stats().evictions.pressure);
        return { anonBytes: anon, budgetBytes: 1_000_000_000 };
      },
      reclaim: () => log.push('reclaim'),
      pressureCheckBytes: 4 * 1024 * 1024,
    });
    await fill(cache, 20);
    log.push(cache.stats().evictions.pressure);
    const readings = log.filter((e) => e !== 'reclaim');
    expect(readings.at(-1)).toBeGreaterThan(0);
    // Between two readings: one reclaim if the sweep of the first evicted, none if it did not.
    let at = 0;
    for (let i = 1; i < readings.length; i++) {
      const next = log.indexOf(readings[i]!, at + 1);
      const between = log.slice(at + 1, next);
      expect(between).toEqual(readings[i]! > readings[i - 1]! ? ['reclaim'] : []);
      at = next;
    }
    // Under budget nothing is evicted, so nothing is collected.
    log.length = 0;
    anon = 1;
    await fill(cache, 40);
    expect(log.length).toBeGreaterThan(0);
    expect(log).not.toContain('reclaim');
  });
});
