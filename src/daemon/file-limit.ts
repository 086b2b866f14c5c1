/**
 * The daemon's open-file limit (issue 25 item 8). Many systems start processes with a soft
 * RLIMIT_NOFILE of 1024 under a much higher hard limit; every viewer, chat platform connection, tool
 * pipe and database file takes descriptors from it. At start the soft limit is raised to the hard
 * one with util-linux `prlimit` (Node has no setrlimit), where it is installed.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';

export type FileLimit =
  { raised: true; from: number; to: number } | { raised: false; soft: number | null; reason: string };

/** Soft and hard "Max open files" of this process, from /proc/self/limits; null when unreadable. */
export function fileLimits(): { soft: number; hard: number } | null {
  try {
    const line = fs
      .readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const [soft, hard] = line?.slice('Max open files'.length).trim().split(/\s+/) ?? [];
    const value = (v: string | undefined): number => (v === 'unlimited' ? Infinity : Number(v));
    if (soft === undefined || hard === undefined || Number.isNaN(value(soft))) return null;
    return { soft: value(soft), hard: value(hard) };
  } catch {
    return null;
  }
}

export function raiseFileLimit(): FileLimit {
  const limits = fileLimits();
  if (limits === null) return { raised: false, soft: null, reason: 'no /proc/self/limits' };
  if (limits.soft >= limits.hard)
    return { raised: false, soft: limits.soft, reason: 'already at the hard limit' };
  const to = limits.hard === Infinity ? 'unlimited' : String(limits.hard);
  const run = spawnSync('prlimit', ['--pid', String(process.pid), `--nofile=${to}:${to}`], {
    stdio: 'ignore',
    timeout: 5000,
  });
  const after = fileLimits();
  if (run.status === 0 && after !== null && after.soft > limits.soft)
    return { raised: true, from: limits.soft, to: after.soft };
  return {
    raised: false,
    soft: limits.soft,
    reason: run.error ? 'prlimit is not installed' : 'prlimit refused',
  };
}
