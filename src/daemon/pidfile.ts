/**
 * The pid file is the single-daemon lock of a home: created exclusively, so two daemons starting
 * together cannot both win. A pid file whose process is gone is stale (a crash) and is replaced.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { DaemonError } from './errors.js';
import type { HomeLayout } from './home.js';

/** True when a process with this pid exists (even one we may not signal). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `pid` is alive and still a gateway: after a crash the pid may have been reused by an
 * unrelated process, which must never be mistaken for the daemon (or signalled by `stop`).
 * Where /proc is unavailable, liveness is all we can know.
 */
export function isGatewayProcess(pid: number): boolean {
  if (!isAlive(pid)) return false;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes('serve');
  } catch {
    return true;
  }
}

/** The pid of the live daemon owning this home, if any. */
export function runningPid(layout: HomeLayout): number | undefined {
  const pid = readPid(layout.pidFile);
  return pid !== undefined && isGatewayProcess(pid) ? pid : undefined;
}

export function acquirePidFile(layout: HomeLayout, pid = process.pid): void {
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(layout.pidFile, `${pid}\n`, { flag: 'wx', mode: 0o600 });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readPid(layout.pidFile);
    if (holder !== undefined && holder !== pid && isGatewayProcess(holder)) {
      throw new DaemonError(
        'already_running',
        `a gateway is already running on ${layout.root} (pid ${holder}): stop it with "gatehouse stop", or set GATEHOUSE_HOME to another directory`,
      );
    }
    removeQuietly(layout.pidFile);
  }
  throw new DaemonError(
    'already_running',
    `another gateway is starting on ${layout.root} at the same moment: try again`,
  );
}

export function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Already gone is the state we want.
  }
}
