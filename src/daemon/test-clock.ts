/**
 * The daemon's one clock for the things tests must move in time: scheduled jobs (docs/scheduling.md)
 * and the budget day (docs/cost.md, "Budgets"). It is the system clock, except in tests:
 * GATEHOUSE_TEST_CLOCK names a file holding an ISO instant that is "now" (read at every use; the file
 * absent: the system clock). It is refused unless NODE_ENV is `test`, so a production daemon never
 * runs on a file's time. The budget day once had its own offset variable; it is refused by name,
 * so a test still setting it fails at start rather than running on the system's day.
 */
import fs from 'node:fs';
import { DaemonError } from './errors.js';

export const TEST_CLOCK_ENV = 'GATEHOUSE_TEST_CLOCK';
export const RETIRED_CLOCK_ENV = 'GATEHOUSE_TEST_CLOCK_OFFSET_S';

export interface DaemonClock {
  now(): Date;
  /** A test's clock: it moves in jumps, so whoever waits on it looks often. */
  readonly test: boolean;
}

const SYSTEM_CLOCK: DaemonClock = { now: () => new Date(), test: false };

export function daemonClock(env: NodeJS.ProcessEnv): DaemonClock {
  const retired = env[RETIRED_CLOCK_ENV];
  if (retired !== undefined && retired !== '')
    throw new DaemonError(
      'start_failed',
      `${RETIRED_CLOCK_ENV} is no longer read: the test clock is ${TEST_CLOCK_ENV} (a file holding an ISO instant, with NODE_ENV=test); unset it`,
    );
  const file = env[TEST_CLOCK_ENV];
  if (file === undefined || file === '') return SYSTEM_CLOCK;
  if (env.NODE_ENV !== 'test')
    throw new DaemonError(
      'start_failed',
      `${TEST_CLOCK_ENV} is a test-only clock control and is refused outside tests (NODE_ENV=test): unset it`,
    );
  return {
    test: true,
    now: () => {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8').trim();
      } catch {
        return new Date();
      }
      const at = new Date(text);
      if (Number.isNaN(at.getTime())) throw new Error(`${TEST_CLOCK_ENV}: "${text}" is not an instant`);
      return at;
    },
  };
}
