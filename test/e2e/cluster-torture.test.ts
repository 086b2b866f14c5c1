import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { runClusterTorture } from '../../scripts/torture/cluster.js';
import { requireBuild } from './cli.js';

/**
 * A bounded run of the torture harness's cluster mode inside `npm test` (SCL-1): three daemons on
 * one PostgreSQL schema, SIGKILLs of any of them (at random and at fault points), clients on random
 * instances with lost-ACK retries, and per-minute scheduled jobs on the test clock (issue 28), one
 * minute per iteration. Besides the six invariants of one daemon, no two instances ever had model
 * requests of one session open at once, lease tokens never went back, epochs grew across the
 * cluster, and every scheduled instant was fired exactly once. The long run (1,000 kills) is
 * recorded in docs/crash-safety.md; GATEHOUSE_CLUSTER_TORTURE_ITERATIONS=<n> runs the first case
 * bigger (n iterations, five jobs).
 */
const LONG = Number(process.env['GATEHOUSE_CLUSTER_TORTURE_ITERATIONS'] ?? 0);
if (!Number.isInteger(LONG) || LONG < 0)
  throw new Error('GATEHOUSE_CLUSTER_TORTURE_ITERATIONS must be a whole number of iterations, e.g. 60');
const ITERATIONS = Math.max(LONG, 6);
const JOBS = LONG > 0 ? 5 : 2;

let abort = new AbortController();
afterEach(() => {
  abort.abort();
  abort = new AbortController();
});

describe('SCL-1 cluster torture (bounded)', () => {
  it(
    'three instances, kills of any: nothing lost or run twice, never two owners at once, every job instant fired once',
    async () => {
      requireBuild();
      const seed = 20261202;
      process.stderr.write(
        `cluster torture seed ${seed} (replay: npm run torture -- --cluster 3 --iterations ${ITERATIONS} --seed ${seed} --lease-s 10 --jobs ${JOBS})\n`,
      );
      // What the harness did (iterations, kills, self-stops, the drain's rounds): printed if the case fails.
      const lines: string[] = [];
      onTestFailed(() => {
        process.stderr.write(`cluster torture log (last ${lines.length} lines):\n${lines.join('\n')}\n`);
      });
      const summary = await runClusterTorture({
        iterations: ITERATIONS,
        seed,
        instances: 3,
        // 10 s, as the other cluster cases: beside a second gate run (load 20-27) renewals stalled
        // past 1.5 s so often that with a 3 s lease ten instances in a row stopped themselves in the
        // final drain. The kills still hand sessions over (owner_changes below); each waits longer.
        leaseS: 10,
        jobs: JOBS,
        signal: abort.signal,
        log: (line) => {
          lines.push(`${new Date().toISOString()} ${line}`);
          if (lines.length > 200) lines.shift();
        },
        // A loaded machine can pass six iterations without a takeover: go on (bounded) until one.
        extend: { maxIterations: ITERATIONS + 8, enough: (p) => p.ownerChanges > 0 },
      });
      expect(summary.violations, `replay with --seed ${seed}`).toEqual([]);
      expect(summary.lost).toBe(0);
      expect(summary.duplicated).toBe(0);
      expect(summary.admissions).toBeGreaterThan(0);
      expect(summary.completed).toBeGreaterThan(0);
      expect(summary.iterations).toBeGreaterThanOrEqual(6);
      expect(Object.values(summary.kills).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(6);
      // Sessions changed hands: the kills were takeovers, not only restarts of an idle instance.
      expect(summary.owner_changes).toBeGreaterThan(0);
      // One minute per iteration for each job: each instant fired once, none lost, none twice.
      expect(summary.jobs).toMatchObject({
        jobs: JOBS,
        instants: JOBS * summary.iterations,
        lost: 0,
        duplicated: 0,
      });
      expect(summary.jobs.fired + summary.jobs.unknown).toBe(summary.jobs.instants);
    },
    240_000 + LONG * 30_000,
  );

  it('--minutes stops starting iterations once its time is up; the drain and checks still run', async () => {
    requireBuild();
    const summary = await runClusterTorture({
      iterations: 50,
      minutes: 0,
      seed: 7,
      instances: 2,
      leaseS: 3,
      signal: abort.signal,
    });
    expect(summary.iterations).toBe(0);
    expect(summary.violations).toEqual([]);
    expect(summary.lost).toBe(0);
  }, 120_000);
});
