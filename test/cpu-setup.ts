/**
 * Records each test file's CPU time, its own and that of the processes it started and waited for
 * (daemons, `gatehouse` commands, bash, MCP servers, Chromium), in the file's task meta, so the
 * closing report (test/summary-reporter.ts) can name the files that cost the gate the most CPU. On
 * a 2-core machine the run is as long as its CPU, and wall times say more about what ran beside a
 * file than about the file (docs/testing.md, "Where the time goes").
 *
 * Files share a worker (`isolate: false`) one after another, so the worker's counters before and
 * after a file are that file's. A process the file started and did not wait for (an orphan
 * reparented to init) is not counted; PostgreSQL's server processes are not either.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';

declare module '@vitest/runner' {
  interface TaskMeta {
    /** CPU seconds (user + system) of the file's worker and its waited-for children. */
    cpuSeconds?: number;
  }
}

/** Linux's clock ticks per second for /proc times (USER_HZ, 100 on every Linux this runs on). */
const TICKS_PER_SECOND = 100;

/** CPU seconds this process and its waited-for children have used, or undefined off Linux. */
export function processTreeCpuSeconds(statText?: string): number | undefined {
  let text = statText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/stat', 'utf8');
    } catch {
      return undefined;
    }
  }
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // Fields 14-17 of proc(5): utime, stime, cutime, cstime; field 3 is fields[0] here.
  const ticks = [11, 12, 13, 14].reduce((sum, index) => sum + Number(fields[index]), 0);
  return Number.isFinite(ticks) ? ticks / TICKS_PER_SECOND : undefined;
}

let startedAt: number | undefined;
beforeAll(() => {
  startedAt = processTreeCpuSeconds();
});
// vitest reads the first parameter as fixtures and wants it destructured: none are used.
// eslint-disable-next-line no-empty-pattern
afterAll(({}, suite) => {
  const endedAt = processTreeCpuSeconds();
  if (startedAt !== undefined && endedAt !== undefined) suite.meta.cpuSeconds = endedAt - startedAt;
});
