/**
 * A command whose reader goes away (`gatehouse status | head -1`) ends quietly: no `write EPIPE`,
 * no stack trace, exit code 0 (issue 26, item 13).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { finished, requireBuild, runCli, spawnCli, tempHome } from './cli.js';
import { writeConfig } from './gateway-harness.js';

beforeAll(requireBuild);
const home = tempHome();
afterAll(async () => {
  await runCli(home, ['stop']);
});

/** Runs a command whose stdout is closed before it writes a byte: every write it makes is EPIPE. */
async function withClosedStdout(args: string[]) {
  const child = spawnCli(home, args);
  child.stdin!.end();
  const run = finished(child);
  child.stdout!.destroy();
  return run;
}

/** Both streams closed before a byte is written, as `gatehouse config 2>&1 | head -0` leaves them. */
async function withNoReader(args: string[]) {
  const child = spawnCli(home, args);
  child.stdin!.end();
  child.stdout!.destroy();
  child.stderr!.destroy();
  return new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
}

describe('a command piped into a reader that stops reading', () => {
  it('status, config and sessions --show end quietly', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'gh-pipe-'));
    const chat = await runCli(home, ['chat', '--cwd', cwd], { input: 'hello\n' });
    expect(chat.code).toBe(0);
    const id = /gatehouse chat --resume (\S+)/.exec(chat.stdout)![1]!;
    for (const args of [
      ['status'],
      ['status', '--json'],
      ['config'],
      ['sessions', '--show', id],
      ['sessions'],
    ]) {
      const run = await withClosedStdout(args);
      expect({ args, stderr: run.stderr, code: run.code }).toEqual({ args, stderr: '', code: 0 });
    }
  }, 120_000);

  it('a note on stderr with nobody reading ends quietly too', async () => {
    // An old timer key makes every command that reads the config write a note to stderr first.
    writeConfig(home, 'idle_minutes: 5\n');
    expect(await withNoReader(['config'])).toBe(0);
  }, 120_000);
});
