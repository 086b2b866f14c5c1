import { afterEach, describe, expect, it } from 'vitest';
import { runTorture } from '../../scripts/torture/harness.js';
import { requireBuild } from './cli.js';

/**
 * A bounded torture run inside `npm test`: a fixed seed (reproducible) and one random seed (new
 * interleavings every run; printed so a failure can be replayed with `npm run torture -- --seed S`),
 * and one run armed only at the fault points inside compression and reset (LIN-1, LIN-2), whose
 * extra invariant is that a logical session's history is always exactly its parent's or its
 * child's. A run that outlives its test is aborted, which kills its daemon.
 */
let abort = new AbortController();
afterEach(() => {
  abort.abort();
  abort = new AbortController();
});

describe('REC-1/REC-2/REC-3 kill -9 torture (bounded)', () => {
  const randomSeed = Math.floor(Math.random() * 2 ** 31);

  it.each([
    ['fixed', 20261129],
    ['random', randomSeed],
  ])(
    '%s seed %i: nothing acknowledged is lost or run twice',
    async (_kind, seed) => {
      requireBuild();
      process.stderr.write(
        `torture seed ${seed} (replay: npm run torture -- --iterations 6 --seed ${seed})\n`,
      );
      const summary = await runTorture({ iterations: 6, seed, signal: abort.signal });
      expect(summary.violations, `replay with --seed ${seed}`).toEqual([]);
      expect(summary.lost).toBe(0);
      expect(summary.duplicated).toBe(0);
      expect(summary.admissions).toBeGreaterThan(0);
      expect(summary.completed).toBeGreaterThan(0);
      expect(Object.values(summary.kills).reduce((a, b) => a + b, 0)).toBe(6);
    },
    120_000,
  );

  it('kills inside compression and reset: every history stays exactly its parent or its child', async () => {
    requireBuild();
    const faults = [
      'reset.committed',
      'compress.summarised',
      'compress.transaction',
      'compress.committed',
    ] as const;
    const seed = 5;
    process.stderr.write(
      `torture seed ${seed} (replay: npm run torture -- --iterations 8 --seed ${seed} --faults ${faults.join(',')})\n`,
    );
    // Up to 12 s per armed iteration to reach its point: on a loaded machine 4 s can pass before
    // the workload gets to its first compression, and the run then proves nothing about them.
    const summary = await runTorture({
      iterations: 8,
      seed,
      faults,
      faultBudgetMs: 12_000,
      signal: abort.signal,
    });
    expect(summary.violations, `replay with --seed ${seed}`).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicated).toBe(0);
    expect(summary.compressions).toBeGreaterThan(0);
    expect(summary.resets).toBeGreaterThan(0);
    // At least one daemon died inside a compression or a reset.
    expect(
      faults.some((f) => (summary.kills[f] ?? 0) > 0),
      JSON.stringify(summary.kills),
    ).toBe(true);
  }, 240_000);
});
