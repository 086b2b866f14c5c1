import { readdirSync, readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { runTorture } from '../../scripts/torture/harness.js';
import { requireBuild } from './cli.js';

/**
 * A bounded torture run inside `npm test`: a fixed seed (reproducible) and one random seed (new
 * interleavings every run; printed so a failure can be replayed with `npm run torture -- --seed S`),
 * and one run armed only at the fault points inside compression and reset (LIN-1, LIN-2), whose
 * extra invariant is that a logical session's history is always exactly its parent's or its
 * child's. A run that outlives its test is aborted, which kills its daemon.
 */
/** Pids of this process's children running `gatehouse serve` (zombies excluded). */
function servingChildren(): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(ppid) !== process.pid || state === 'Z') continue;
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').includes('serve'))
        found.push(Number(entry));
    } catch {
      continue; // the process ended while being read
    }
  }
  return found;
}

/** Lines of the run's log kept for a failure's report: the newest ones, if there are more. */
const LOG_LINES = 400;

/**
 * The harness's log of the current case, each line with the time since the case began, printed
 * only if the case fails (a timeout too): where a run that outlived its test was waiting.
 */
function logOnFailure(seed: number): (line: string) => void {
  const began = Date.now();
  const lines: string[] = [];
  onTestFailed(() => {
    process.stderr.write(`torture seed ${seed} failed; the run's log:\n${lines.join('\n')}\n`);
  });
  return (line) => {
    lines.push(`+${Date.now() - began} ms ${line}`);
    if (lines.length > LOG_LINES) lines.shift();
  };
}

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
      const summary = await runTorture({
        iterations: 6,
        seed,
        signal: abort.signal,
        log: logOnFailure(seed),
      });
      expect(summary.violations, `replay with --seed ${seed}`).toEqual([]);
      expect(summary.lost).toBe(0);
      expect(summary.duplicated).toBe(0);
      expect(summary.admissions).toBeGreaterThan(0);
      expect(summary.completed).toBeGreaterThan(0);
      expect(Object.values(summary.kills).reduce((a, b) => a + b, 0)).toBe(6);
    },
    120_000,
  );

  it('a run aborted once it has spawned its daemon (its test timed out) leaves no daemon behind', async () => {
    requireBuild();
    // The worker is shared with other files (vitest.config.ts): only daemons this run spawned count.
    const before = new Set(servingChildren());
    const spawned = () => servingChildren().filter((pid) => !before.has(pid));
    const own = new AbortController();
    const run = runTorture({ iterations: 1000, seed: 11, signal: own.signal }).catch(() => undefined);
    // A bounded poll: no event tells another process that the harness's daemon has started.
    const deadline = Date.now() + 60_000;
    while (spawned().length === 0 && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 100));
    const running = spawned();
    expect(running.length).toBe(1);
    own.abort();
    await run;
    expect(spawned()).toEqual([]);
  }, 120_000);

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
      log: logOnFailure(seed),
      // No tampering here (the other smokes tamper): a tampered session leaves the lineage count,
      // and the one compressed session could be the one tampered with.
      tamper: false,
      // On a loaded machine eight iterations can pass before a compression is acknowledged or a
      // kill lands inside one: go on (bounded) until both have happened, and a reset too.
      extend: {
        maxIterations: 16,
        enough: (p) => p.compressions > 0 && p.resets > 0 && faults.some((f) => (p.kills[f] ?? 0) > 0),
      },
    });
    expect(summary.violations, `replay with --seed ${seed}`).toEqual([]);
    expect(summary.lost).toBe(0);
    expect(summary.duplicated).toBe(0);
    expect(summary.compressions, JSON.stringify(summary.kills)).toBeGreaterThan(0);
    expect(summary.resets).toBeGreaterThan(0);
    // At least one daemon died inside a compression or a reset.
    expect(
      faults.some((f) => (summary.kills[f] ?? 0) > 0),
      JSON.stringify(summary.kills),
    ).toBe(true);
  }, 240_000);
});
