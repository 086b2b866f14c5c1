/**
 * The profile tools docs/benchmarks.md shows (issue 32 aim 2), run as documented: a CPU profile of
 * the daemon over sequential turns (`node --import tsx bench/turn-profile.ts N turn.cpuprofile`),
 * then where its busy time went (`node scripts/profile-summary.mjs turn.cpuprofile --match
 * gatehouse`). Fewer turns than the docs' 600, so it costs the gate seconds, not a minute.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requireBuild } from './cli.js';
import { tempDir } from './seed-fixture.js';

const ROOT = join(import.meta.dirname, '..', '..');

function run(args: string[], cwd: string) {
  const result = spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 90_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('the turn profile and its summary, as docs/benchmarks.md runs them', () => {
  it('turn-profile writes a profile of the daemon and its figures; profile-summary reads it', () => {
    requireBuild();
    const dir = tempDir();
    const profile = join(dir, 'turn.cpuprofile');
    const turns = run(['--import', 'tsx', join(ROOT, 'bench/turn-profile.ts'), '10', profile], ROOT);
    expect(turns.code, turns.stderr).toBe(0);
    expect(turns.stdout).toMatch(
      /^turns 10: p50 [\d.]+ ms, p99 [\d.]+ ms; daemon CPU [\d.]+ ms a turn \(profiler on\) \(main thread [\d.]+, other threads [\d.]+\); [\d.]+ log flushes and [\d.]+ group operations a turn; profile in .*turn\.cpuprofile\n$/,
    );
    expect(existsSync(profile)).toBe(true);
    const written = JSON.parse(readFileSync(profile, 'utf8')) as { nodes?: unknown; samples?: unknown };
    expect(Array.isArray(written.nodes) && Array.isArray(written.samples)).toBe(true);

    const summary = run([join(ROOT, 'scripts/profile-summary.mjs'), profile, '--match', 'gatehouse'], ROOT);
    expect(summary.code, summary.stderr).toBe(0);
    const lines = summary.stdout.split('\n');
    expect(lines[0]).toMatch(/^busy \d+ ms, idle \d+ ms \(shares below are of busy time\)$/);
    // Only the daemon's own functions, each with its share of the busy samples.
    const rows = lines.filter((line) => /^ *[\d.]+% {2}/.test(line));
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) expect(row).toMatch(/gatehouse/);
  }, 120_000);
});
