import { describe, expect, it } from 'vitest';
import { describeAgentCache } from '../../../src/surfaces/cli/commands/status.js';

describe('gatehouse status: the agent cache line', () => {
  it('shows size, hits, misses and evictions by cause', () => {
    expect(
      describeAgentCache({
        size: 12,
        hits: 340,
        misses: 12,
        evictions: { ttl: 0, pressure: 0, lru: 0, invalidated: 1 },
        bytes: 3.1 * 2 ** 20,
      }),
    ).toBe('12 agents (3.1 MiB), 340 hits, 12 misses; evicted: ttl 0, pressure 0, lru 0, invalidated 1');
  });
});
