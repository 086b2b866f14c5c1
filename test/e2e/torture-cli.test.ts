/**
 * The torture harness as docs/crash-safety.md shows it: `npm run torture -- …`, run as a user runs
 * it (npm, the script, the real daemon or daemons), with fewer iterations than the documented runs
 * so it fits in `npm test`. It prints its summary as JSON and "ok" on a clean run; a bad option is
 * refused at once with exit code 2 and a line that says what to change, before anything starts.
 */
import { spawn } from 'node:child_process';
import { readdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { finished, requireBuild, type Run } from './cli.js';

beforeAll(requireBuild);

const ROOT = resolve(import.meta.dirname, '../..');

function torture(args: string[]): Promise<Run> {
  const child = spawn('npm', ['run', '--silent', 'torture', '--', ...args], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return finished(child);
}

describe('npm run torture', () => {
  it('runs one daemon as documented (--iterations, --seed, --keep) and prints its summary', async () => {
    const run = await torture(['--iterations', '2', '--seed', '42', '--quiet', '--keep']);
    expect(run.stderr).toContain('torture: 2 iterations, seed 42');
    expect(run.stderr).toContain('ok: lost 0, duplicated 0');
    expect(run.code).toBe(0);
    const summary = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ seed: 42, iterations: 2, lost: 0, duplicated: 0 });
    expect(Object.values(summary.kills as Record<string, number>).reduce((a, b) => a + b, 0)).toBe(2);
    // --keep: the temp home stays, with the daemon's log in it, for a look after the run.
    const home = summary.home as string;
    try {
      expect(readdirSync(home, { recursive: true }).map(String)).toEqual(
        expect.arrayContaining([expect.stringMatching(/\.log$/)]),
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  }, 180_000);

  it('runs the cluster mode as documented (--cluster, --lease-s, --minutes, --jobs)', async () => {
    const run = await torture([
      '--cluster',
      '3',
      '--iterations',
      '1',
      '--seed',
      '20261206',
      // 6 s, not the documented 3: an instance whose renewals stall for half its lease stops itself
      // (as it must), and on a machine loaded by the whole gate 1.5 s stalls happen.
      '--lease-s',
      '6',
      '--minutes',
      '5',
      '--jobs',
      '1',
    ]);
    expect(run.stderr).toContain('iteration 1/1:');
    expect(run.stderr).toContain('ok: lost 0, duplicated 0');
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({
      seed: 20261206,
      iterations: 1,
      instances: 3,
      lease_s: 6,
      lost: 0,
      duplicated: 0,
      jobs: { jobs: 1, instants: 1, lost: 0, duplicated: 0 },
    });
  }, 240_000);

  it.each([
    [['--iterations', 'many'], '--iterations must be a whole number of at least 1, not "many"'],
    [['--seed=-4'], '--seed must be a whole number from 0 to 2147483647, not "-4"'],
    [['--minutes', '5'], '--minutes applies to the cluster mode only: add --cluster N'],
    [['--lease-s', '3'], '--lease-s applies to the cluster mode only: add --cluster N'],
    [['--jobs', '2'], '--jobs applies to the cluster mode only: add --cluster N'],
    [['--cluster', '3', '--jobs', 'two'], '--jobs must be a whole number from 0 to 100, not "two"'],
    [['--cluster', '3', '--max-resumes', '1'], '--max-resumes applies to one daemon only'],
    [['--cluster', '3', '--lease-s', '1'], '--lease-s must be a whole number from 2 to 300, not "1"'],
    [['--faults', 'tool.running,nowhere'], 'unknown fault point "nowhere"; known: admission.committed'],
    [['--iteration', '3'], "Unknown option '--iteration'"],
  ])('refuses %j with exit code 2 and says why', async (args, message) => {
    const run = await torture(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`torture: ${message}`);
    expect(run.stderr).not.toMatch(/\n\s+at /);
    expect(run.stdout).toBe('');
  });
});
