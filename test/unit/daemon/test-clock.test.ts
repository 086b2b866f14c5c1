/**
 * The daemon's one test clock (src/daemon/test-clock.ts), read by scheduled jobs and the budget day:
 * the system's unless GATEHOUSE_TEST_CLOCK names a file, refused outside NODE_ENV=test, and the
 * retired offset variable refused by name.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { daemonClock } from '../../../src/daemon/test-clock.js';
import { DaemonError } from '../../../src/daemon/errors.js';

describe('the daemon clock', () => {
  it('is the system clock without GATEHOUSE_TEST_CLOCK', () => {
    const clock = daemonClock({ NODE_ENV: 'test' });
    expect(clock.test).toBe(false);
    expect(Math.abs(clock.now().getTime() - Date.now())).toBeLessThan(60_000);
  });

  it("reads the file's instant at every use, and the system clock while the file is absent", () => {
    const dir = mkdtempSync(join(tmpdir(), 'gh-clock-'));
    try {
      const file = join(dir, 'clock');
      const clock = daemonClock({ NODE_ENV: 'test', GATEHOUSE_TEST_CLOCK: file });
      expect(clock.test).toBe(true);
      expect(clock.now().getUTCFullYear()).toBe(new Date().getUTCFullYear());
      writeFileSync(file, '2031-05-06T07:08:09Z\n');
      expect(clock.now().toISOString()).toBe('2031-05-06T07:08:09.000Z');
      writeFileSync(file, '2031-05-07T00:00:00Z');
      expect(clock.now().toISOString()).toBe('2031-05-07T00:00:00.000Z');
      writeFileSync(file, 'tomorrow');
      expect(() => clock.now()).toThrow(/"tomorrow" is not an instant/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('is refused outside tests, and the retired offset variable is refused by name', () => {
    expect(() => daemonClock({ NODE_ENV: 'production', GATEHOUSE_TEST_CLOCK: '/x' })).toThrow(
      /GATEHOUSE_TEST_CLOCK is a test-only clock control and is refused outside tests/,
    );
    expect(() => daemonClock({ GATEHOUSE_TEST_CLOCK: '/x' })).toThrow(DaemonError);
    expect(() => daemonClock({ NODE_ENV: 'test', GATEHOUSE_TEST_CLOCK_OFFSET_S: '86400' })).toThrow(
      /GATEHOUSE_TEST_CLOCK_OFFSET_S is no longer read: the test clock is GATEHOUSE_TEST_CLOCK/,
    );
  });
});
