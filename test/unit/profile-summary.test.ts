/** scripts/profile-summary.mjs on a profile whose shares are known (issue 32 aim 2). */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { profileFrame as frame } from '../shared/cpu-profile.js';

const SCRIPT = join(import.meta.dirname, '..', '..', 'scripts', 'profile-summary.mjs');

/**
 * root → turn (app.js:10) → writev (native) and → commit (app.js:20) → run (native); idle beside.
 * Samples, 1 ms each: writev ×3, run ×1, turn itself ×0, idle ×4.
 */
const PROFILE = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 5] },
    { id: 2, callFrame: frame('turn', 'file:///srv/app.js', 9), children: [3, 4] },
    { id: 3, callFrame: frame('writev') },
    { id: 4, callFrame: frame('commit', 'file:///srv/app.js', 19), children: [6] },
    { id: 5, callFrame: frame('(idle)') },
    { id: 6, callFrame: frame('run') },
  ],
  startTime: 0,
  endTime: 8000,
  samples: [3, 3, 5, 3, 6, 5, 5, 5],
  timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000, 1000, 1000],
};

function summary(...args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'gh-profile-'));
  const file = join(dir, 'p.cpuprofile');
  writeFileSync(file, JSON.stringify(PROFILE));
  const result = spawnSync(process.execPath, [SCRIPT, file, ...args], { encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
}

describe('profile-summary', () => {
  it('gives self and inclusive shares of the busy samples, idle apart', () => {
    const out = summary();
    expect(out).toContain('busy 4 ms, idle 4 ms (shares below are of busy time)');
    const [self, inclusive] = out.split('with what they called');
    expect(self).toContain(' 75.0%  writev\n');
    expect(self).toContain(' 25.0%  run\n');
    expect(self).not.toContain('turn');
    expect(inclusive).toContain('100.0%  turn srv/app.js:10\n');
    expect(inclusive).toContain(' 75.0%  writev\n');
    expect(inclusive).toContain(' 25.0%  commit srv/app.js:20\n');
  });

  it('keeps only the rows --match names, and at most --top of each', () => {
    const out = summary('--match', 'app\\.js', '--top', '1');
    const rows = out.split('\n').filter((line) => /% {2}/.test(line));
    expect(rows).toEqual(['100.0%  turn srv/app.js:10']);
  });

  it('says how it is used when given no file', () => {
    const result = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8' });
    expect(result.status).toBe(2);
    expect(result.stderr).toContain('usage: node scripts/profile-summary.mjs FILE');
  });
});
