/** scripts/long-tasks.mjs (issue 32 aim 3) on a profile whose tasks are known. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { profileFrame as frame } from '../shared/cpu-profile.js';

const SCRIPT = join(import.meta.dirname, '..', '..', 'scripts', 'long-tasks.mjs');

/**
 * Two entry points under the root (a timer, a socket read), each with one function of the app.
 * The timer's task: 25 samples of 1 ms and one 15 ms gap (descheduled). Then, with no idle sample
 * between, 10 ms under the socket read: another macrotask, under the 20 ms shown. Idle. Then 30 ms
 * under the socket read and a garbage collector sample, which joins the task around it.
 */
function profile() {
  const samples: number[] = [];
  const deltas: number[] = [];
  const add = (id: number, n: number, delta = 1000) => {
    for (let i = 0; i < n; i++) {
      samples.push(id);
      deltas.push(delta);
    }
  };
  add(3, 25);
  add(3, 1, 15_000);
  add(7, 10);
  add(5, 2);
  add(7, 30);
  add(4, 1);
  add(5, 1);
  return {
    nodes: [
      { id: 1, callFrame: frame('(root)'), children: [2, 4, 5, 6] },
      { id: 2, callFrame: frame('listOnTimeout', 'node:internal/timers', 500), children: [3] },
      { id: 3, callFrame: frame('parse', 'file:///srv/app.js', 9) },
      { id: 4, callFrame: frame('(garbage collector)') },
      { id: 5, callFrame: frame('(idle)') },
      { id: 6, callFrame: frame('onStreamRead', 'node:internal/stream_base_commons', 160), children: [7] },
      { id: 7, callFrame: frame('write', 'file:///srv/app.js', 19) },
    ],
    startTime: 0,
    endTime: samples.length * 1000,
    samples,
    timeDeltas: deltas,
  };
}

function longTasks(...args: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), 'gh-long-tasks-'));
  writeFileSync(join(dir, 'daemon.cpuprofile'), JSON.stringify(profile()));
  const result = spawnSync(process.execPath, [SCRIPT, dir, ...args], { encoding: 'utf8' });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
}

describe('long-tasks', () => {
  it('lists the stretches that held the loop, longest first, with their descheduled time apart', () => {
    const lines = longTasks().split('\n');
    expect(lines[0]).toBe('daemon.cpuprofile: 2 tasks holding the loop 20 ms or more');
    expect(lines[1]).toMatch(/^ {2}31 ms held \(\d+ ms wall, 0 ms descheduled\) at 0\.1 s$/);
    expect(lines[2]).toBe('    inclusive: write app.js:20 30 | onStreamRead stream_base_commons:161 30');
    expect(lines[3]).toBe('    self: write app.js:20 30');
    expect(lines[4]).toMatch(/^ {2}25 ms held \(\d+ ms wall, 15 ms descheduled\) at 0\.0 s$/);
    expect(lines[5]).toBe('    inclusive: parse app.js:10 25');
  });

  it('--min sets the shortest task shown; --frames adds the matching frames of each', () => {
    const out = longTasks('--min', '5', '--frames', 'write');
    expect(out).toContain('daemon.cpuprofile: 3 tasks holding the loop 5 ms or more');
    expect(out).toMatch(/ {2}10 ms held/);
    expect(out).toContain('    matching: write app.js:20 30');
    expect(out).toContain('    matching: write app.js:20 10');
  });
});

describe('long-tasks --gap', () => {
  it('counts a sample spaced more than --gap ms as descheduled; a larger --gap counts it as CPU', () => {
    expect(longTasks()).toMatch(/ {2}25 ms held \(\d+ ms wall, 15 ms descheduled\)/);
    const out = longTasks('--gap', '20');
    expect(out).toMatch(/ {2}40 ms held \(\d+ ms wall, 0 ms descheduled\)/);
    expect(out).toContain('    inclusive: parse app.js:10 40');
  });
});
