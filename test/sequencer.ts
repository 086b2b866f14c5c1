/**
 * How the test files are run: how many at once (vitest.config.ts) and in which order. Files run side
 * by side, so the run lasts at least as long as its slowest file, and longer when that file starts
 * late: with the longest files first, the short ones fill the workers at the end and the run's tail
 * is short. The order is fixed (not vitest's cache of the last run, which a clean clone does not
 * have): the files measured slowest (docs/testing.md, "Where the time goes"), then the other
 * end-to-end files, the integration files and the unit files, each group larger files first.
 */
import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Test files at once. Most of a file's time is spent waiting on child daemons, sockets, PostgreSQL
 * and bash, not on the CPU of its own process, so two and a half per core (rounded up: five on two
 * cores) keep a 2-core machine busy where vitest's default (cores - 1: one on 2 cores) left it
 * idle. Four on two cores still left CPU unused: alone, `vitest run` took 632 s with four and
 * 552–643 s with five, `.ci/run` 753 s against 669–775 s (docs/testing.md: a small gain, inside the
 * spread between runs). GATEHOUSE_TEST_WORKERS overrides it (1 on a machine busy with other work).
 */
export function testWorkers(env: NodeJS.ProcessEnv, cores: number): number {
  const set = env['GATEHOUSE_TEST_WORKERS'];
  if (set === undefined || set === '') return Math.ceil(2.5 * cores);
  const n = Number(set);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`GATEHOUSE_TEST_WORKERS must be a whole number of at least 1, not '${set}'`);
  return n;
}

/** Slowest first, as the last full runs measured them (their closing lines list the ten slowest). */
export const SLOWEST = [
  'test/e2e/recovery-resume.test.ts',
  'test/e2e/cluster-torture.test.ts',
  'test/e2e/scheduled-jobs.test.ts',
  'test/e2e/mcp.test.ts',
  'test/e2e/torture.test.ts',
  'test/e2e/chat.test.ts',
  'test/e2e/safe-mode.test.ts',
  'test/e2e/torture-cli.test.ts',
  'test/e2e/recovery.test.ts',
  'test/e2e/telegram-crash.test.ts',
  'test/e2e/checkpoints.test.ts',
  'test/e2e/budgets.test.ts',
  'test/e2e/cluster.test.ts',
];

const GROUPS = ['test/e2e/', 'test/integration/', 'test/unit/'];

function rank(path: string): number {
  const slow = SLOWEST.indexOf(path);
  if (slow >= 0) return slow;
  const group = GROUPS.findIndex((prefix) => path.startsWith(prefix));
  return SLOWEST.length + (group >= 0 ? group : GROUPS.length);
}

/** The order files start in: `files` are paths from the repository's root, `size` their bytes. */
export function startOrder(files: readonly string[], size: (path: string) => number): string[] {
  return files
    .map((path) => ({ path, rank: rank(path), size: size(path) }))
    .sort((a, b) => a.rank - b.rank || b.size - a.size || (a.path < b.path ? -1 : 1))
    .map((file) => file.path);
}

export class LongestFirstSequencer extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const byPath = new Map(files.map((spec) => [relative(root, spec.moduleId).split('\\').join('/'), spec]));
    const sizes = new Map(files.map((spec) => [spec.moduleId, statSync(spec.moduleId).size]));
    const order = startOrder([...byPath.keys()], (path) => sizes.get(byPath.get(path)!.moduleId) ?? 0);
    return Promise.resolve(order.map((path) => byPath.get(path)!));
  }
}
