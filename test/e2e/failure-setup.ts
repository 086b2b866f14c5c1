/**
 * When an end-to-end case fails, says what became of the daemons its file started: each one's pid,
 * whether it is still running, stopped by the test, or exited on its own (and then the reason its
 * log gives, "gateway stopping after a failure"), with the last warnings and errors of its log. A
 * case that fails because a connection closed as going away (1001) then names the instance that
 * stopped itself and why, instead of leaving that to a rerun that may not fail.
 */
import { readFileSync } from 'node:fs';
import { afterAll, afterEach } from 'vitest';
import { failureReasonInLog } from '../../scripts/torture/daemon.js';
import { isRunning, startedDaemons, type StartedDaemon } from './gateway-harness.js';

/** pino's level for `warn`: lines at or above it are printed. */
const WARN = 40;
/** How many of a daemon's last warning and error lines are printed. */
const LOG_LINES = 12;

/** A daemon's state, the reason it gave for stopping itself (if any) and its last warnings. */
function daemonReport(d: StartedDaemon, reason: string | null): string {
  const pid = d.child.pid;
  const state = isRunning(d.child)
    ? 'still running'
    : d.endedByTest
      ? 'stopped by the test'
      : `exited on its own (${d.child.signalCode ?? `code ${d.child.exitCode}`})`;
  const lines = [`daemon pid ${pid} in ${d.home}: ${state}${reason ? `; stopped itself: ${reason}` : ''}`];
  for (const line of warnings(d.layout.logFile, pid)) lines.push(`  ${line}`);
  return lines.join('\n');
}

/** The process's last warning and error lines of the home's log (its own pid only). */
function warnings(logFile: string, pid: number | undefined): string[] {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  const found: string[] = [];
  for (const line of text.split('\n')) {
    try {
      const entry = JSON.parse(line) as { pid?: unknown; level?: unknown };
      if (entry.pid === pid && typeof entry.level === 'number' && entry.level >= WARN) found.push(line);
    } catch {
      // A line cut short by the writer, or the empty last one.
    }
  }
  return found.slice(-LOG_LINES);
}

// Runs after the file's own afterEach hooks (vitest runs them last-registered first): a daemon that
// stopped itself before the file's clean-up killed it still counts as exited on its own.
afterEach(({ task }) => {
  if (task.result?.state !== 'fail') return;
  const told = startedDaemons
    .map((d) => ({ d, reason: failureReasonInLog(d.layout.logFile, d.child.pid) }))
    .filter(({ d, reason }) => !d.endedByTest || reason);
  const quiet = startedDaemons.length - told.length;
  if (told.length === 0) return;
  console.error(
    [
      `[${task.name}] the daemons of this file${quiet ? ` (and ${quiet} stopped by the test)` : ''}:`,
      ...told.map(({ d, reason }) => daemonReport(d, reason)),
    ].join('\n'),
  );
});

afterAll(() => {
  startedDaemons.length = 0;
});
