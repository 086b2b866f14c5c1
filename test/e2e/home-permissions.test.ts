/** Issue 12 item 4 against the real daemon: owner-only files, and a log a flood cannot grow. */
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { SUPPRESSED_MESSAGE } from '../../src/daemon/logger.js';
import { rejectedUpgrade } from '../unit/rpc/harness.js';
import { requireBuild } from './cli.js';
import { startDaemon } from './gateway-harness.js';

beforeAll(requireBuild);

/** Every path under `root` with its permission bits (symbolic links are not followed). */
function modes(root: string): Map<string, number> {
  const found = new Map<string, number>();
  const visit = (path: string): void => {
    const stat = lstatSync(path);
    found.set(path, stat.mode & 0o777);
    if (stat.isDirectory()) for (const entry of readdirSync(path)) visit(join(path, entry));
  };
  visit(root);
  return found;
}

function expectOwnerOnly(root: string): void {
  const loose = [...modes(root)].filter(([, mode]) => (mode & 0o077) !== 0);
  expect(loose.map(([path, mode]) => `${path} ${mode.toString(8)}`)).toEqual([]);
}

describe('everything in the home is owner-only (issue 12 item 4)', () => {
  it('on a fresh home, and again after an outside hand loosened every file', async () => {
    const first = await startDaemon();
    const db = first.layout.stateDb('default');
    const made = modes(first.home);
    for (const path of [db, `${db}-wal`, `${db}-shm`, first.layout.logFile, first.layout.pidFile]) {
      expect(made.get(path)).toBe(0o600);
    }
    for (const path of [first.home, first.layout.runDir, first.layout.logsDir]) {
      expect(made.get(path)).toBe(0o700);
    }
    expectOwnerOnly(first.home);
    await first.kill(); // leaves -wal and -shm behind, as a crash does

    for (const [path] of modes(first.home)) {
      if (!lstatSync(path).isSocket()) chmodSync(path, lstatSync(path).isDirectory() ? 0o755 : 0o644);
    }
    const second = await startDaemon({ home: first.home });
    expectOwnerOnly(second.home);
    await second.stop();
  });
});

describe('the log stays bounded under a flood (issue 12 item 4)', () => {
  it('1,000 unauthenticated upgrades leave a few lines and one "suppressed" summary', async () => {
    const daemon = await startDaemon();
    const wsUrl = `${daemon.url.replace(/^http/, 'ws')}/api/ws`;
    for (let batch = 0; batch < 20; batch++) {
      const refused = await Promise.all(
        Array.from({ length: 50 }, () => rejectedUpgrade(wsUrl, ['gatehouse.v1', 'gatehouse-ticket.forged'])),
      );
      expect(refused.every((r) => r.status === 401 || r.status === 403)).toBe(true);
    }
    expect(await daemon.stop()).toBe(0);

    const entries = readFileSync(daemon.layout.logFile, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { msg: string; repeated?: string; suppressed?: number });
    const written = entries.filter((e) => e.msg === 'upgrade refused').length;
    const summaries = entries.filter((e) => e.msg === SUPPRESSED_MESSAGE && e.repeated === 'upgrade refused');
    expect(written).toBeLessThanOrEqual(10);
    expect(summaries.reduce((sum, s) => sum + s.suppressed!, 0)).toBe(1000 - written);
    expect(entries.length).toBeLessThan(60);
  });
});

describe('logging.max_size_mb and logging.keep_files reach the daemon (issue 12 item 4)', () => {
  it('a 2 KiB limit rotates the log of a few starts, keeping one owner-only older file', async () => {
    const config = 'logging:\n  max_size_mb: 0.002\n  keep_files: 1\n';
    const first = await startDaemon({ config });
    const { logFile } = first.layout;
    expect(await first.stop()).toBe(0);
    for (let i = 0; i < 3; i++) expect(await (await startDaemon({ home: first.home })).stop()).toBe(0);
    expect(existsSync(`${logFile}.1`)).toBe(true);
    expect(existsSync(`${logFile}.2`)).toBe(false);
    expect(statSync(`${logFile}.1`).mode & 0o777).toBe(0o600);
    // Rotation happens before a write would pass the limit, so no file grows far past it.
    expect(statSync(`${logFile}.1`).size).toBeLessThan(4096);
  });
});
