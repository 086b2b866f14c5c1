/**
 * Issue 12 item 13: the soak's own arithmetic — where RSS sits by mapping, and when its warm-up
 * ends (every bounded cache steady) — so its figure means what docs/benchmarks.md says.
 */
import { describe, expect, it } from 'vitest';
import { parseSmaps } from '../../bench/proc-memory.js';
import { steadyState } from '../../bench/soak.bench.js';

const SMAPS = [
  '00400000-00c00000 r-xp 00000000 08:01 1234                       /usr/bin/node',
  'Size:               8192 kB',
  'Rss:                4000 kB',
  '02000000-03000000 rw-p 00000000 00:00 0                          [heap]',
  'Rss:                 900 kB',
  'Pss:                 900 kB',
  '7f0000000000-7f0000400000 rw-p 00000000 00:00 0 ',
  'Rss:                 300 kB',
  '7f0000400000-7f0000500000 rw-p 00000000 00:00 0',
  'Rss:                  20 kB',
  '7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                  [stack]',
  'Rss:                   8 kB',
].join('\n');

describe('issue 12 item 13: the soak', () => {
  it('splits resident memory into malloc heap, anonymous and file mappings', () => {
    expect(parseSmaps(SMAPS)).toEqual({ totalKiB: 5228, mallocHeapKiB: 900, anonKiB: 320, fileKiB: 4000 });
  });

  it('ends the warm-up when the database outgrew the page cache and the agent cache cycled, not before 3 minutes', () => {
    const minute = 60_000;
    // The database grows 1 MiB a minute from 2 MiB: it has grown by the 4 MiB cache at minute 4.
    const samples = Array.from({ length: 11 }, (_, m) => ({ atMs: m * minute, dbKiB: (2 + m) * 1024 }));
    expect(steadyState(samples, 1 * minute)).toEqual({
      steadyAtMs: 4 * minute,
      pageCacheFullAtMs: 4 * minute,
    });
    // The agent cache is steady one TTL (120 s) after the last first session detached.
    expect(steadyState(samples, 5 * minute).steadyAtMs).toBe(7 * minute);
    // Neither counts before the floor of 3 minutes.
    const fast = samples.map((s) => ({ ...s, dbKiB: s.dbKiB * 10 }));
    expect(steadyState(fast, 0).steadyAtMs).toBe(3 * minute);
    // Not reached: never a finite end.
    expect(steadyState(samples, null).steadyAtMs).toBe(Infinity);
    expect(steadyState(samples.slice(0, 3), 0).steadyAtMs).toBe(Infinity);
  });
});
