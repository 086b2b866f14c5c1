import { describe, expect, it } from 'vitest';
import { runTorture } from '../../scripts/torture/harness.js';
import { requireBuild } from './cli.js';

/**
 * A bounded torture run inside `npm test`: a fixed seed (reproducible) and one random seed (new
 * interleavings every run; printed so a failure can be replayed with `npm run torture -- --seed S`).
 */
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
      const summary = await runTorture({ iterations: 6, seed });
      expect(summary.violations, `replay with --seed ${seed}`).toEqual([]);
      expect(summary.lost).toBe(0);
      expect(summary.duplicated).toBe(0);
      expect(summary.admissions).toBeGreaterThan(0);
      expect(summary.completed).toBeGreaterThan(0);
      expect(Object.values(summary.kills).reduce((a, b) => a + b, 0)).toBe(6);
    },
    120_000,
  );
});
