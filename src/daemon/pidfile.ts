/**
 * The pid file is the single-daemon lock of a home: created exclusively, so two daemons starting
 * together cannot both win. A pid file whose process is gone is stale (a crash) and is replaced.
 *
 * The file holds `<pid> <start time>`: after a crash the pid may be reused by an unrelated
 * process, which must never be mistaken for the daemon (or signalled by `stop`). The start time
 * (from /proc, in clock ticks since boot) tells the two apart; where /proc is unavailable,
 * liveness is all we can know.
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { DaemonError } from './errors.js';
import type { HomeLayout } from './home.js';

interface PidRecord {
  pid: number;
  startTime?: string;
}

/** True when a process with this pid exists (even one we may not signal). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Field 22 of /proc/<pid>/stat, read after the command name (which may hold spaces). */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function readPidRecord(file: string): PidRecord | undefined {
  try {
    const [pidText, startTime] = readFileSync(file, 'utf8').trim().split(/\s+/);
    const pid = Number(pidText);
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    return startTime ? { pid, startTime } : { pid };
  } catch {
    return undefined;
  }
}

export function readPid(file: string): number | undefined {
  return readPidRecord(file)?.pid;
}

function isLiveHolder(record: PidRecord): boolean {
  if (!isAlive(record.pid)) return false;
  const now = processStartTime(record.pid);
  return record.startTime === undefined || now === undefined || now === record.startTime;
}

/** The pid of the live daemon owning this home, if any. */
export function runningPid(layout: HomeLayout): number | undefined {
  const record = readPidRecord(layout.pidFile);
  return record && isLiveHolder(record) ? record.pid : undefined;
}

export function acquirePidFile(layout: HomeLayout, pid = process.pid): void {
  const contents = `${pid} ${processStartTime(pid) ?? ''}`.trim();
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(layout.pidFile, `${contents}\n`, { flag: 'wx', mode: 0o600 });
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readPidRecord(layout.pidFile);
    if (holder !== undefined && holder.pid !== pid && isLiveHolder(holder)) {
      throw new DaemonError(
        'already_running',
        `a gateway is already running on ${layout.root} (pid ${holder.pid}): stop it with "gatehouse stop", or set GATEHOUSE_HOME to another directory`,
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
