/**
 * What this host can enforce for a safe-mode worker (docs/tools.md, "Safe mode"), decided once by
 * probing the real kernel, and the argv that applies it:
 * - memory (address space), CPU seconds and open files: per-process rlimits set by `prlimit` on
 *   every command the worker runs (inherited by everything the command starts);
 * - processes: a pids cgroup holding the worker and all it starts (exact, and it also lets the
 *   worker stop every leftover process). Without a writable pids cgroup, a non-root daemon falls
 *   back to RLIMIT_NPROC; root without one cannot limit processes, so safe mode is refused;
 * - network: the worker runs in its own network namespace (`unshare -n`, no interfaces at all)
 *   where the kernel allows it; elsewhere it shares the host's network (recorded, never silent).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export interface SafeModeLimits {
  /** Address space of each process, in MiB (RLIMIT_AS). */
  memory_mb: number;
  /** CPU seconds of each process (RLIMIT_CPU). */
  cpu_s: number;
  /** Open files of each process (RLIMIT_NOFILE). */
  open_files: number;
  /** Processes of the whole worker (pids cgroup; RLIMIT_NPROC as the non-root fallback). */
  processes: number;
}

export type ProcessLimit = { kind: 'cgroup'; parent: string } | { kind: 'rlimit' };

/** The host's verdict: how each limit is enforced, or why safe mode cannot be honoured here. */
export type IsolationSupport =
  | { ok: true; processLimit: ProcessLimit; network: 'none' | 'host'; netLauncher: readonly string[] }
  | { ok: false; reason: string };

function runs(argv: readonly string[]): boolean {
  const [program, ...args] = argv;
  const result = spawnSync(program!, args, { stdio: 'ignore', timeout: 5000 });
  return result.status === 0;
}

function rlimitArgs(limits: SafeModeLimits): string[] {
  return [`--as=${limits.memory_mb * 1024 * 1024}`, `--cpu=${limits.cpu_s}`, `--nofile=${limits.open_files}`];
}

/** The cgroup directories this process may create pids-limited children in (v2 first, then v1). */
function pidsCgroupCandidates(): string[] {
  let lines: string[];
  try {
    lines = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const line of lines) {
    const [, controllers, where] = line.split(':', 3) as [string, string, string];
    if (controllers === '' && where !== undefined) out.unshift(path.join('/sys/fs/cgroup', where));
    else if (controllers?.split(',').includes('pids')) out.push(path.join('/sys/fs/cgroup/pids', where));
  }
  return out;
}

/** A parent under which a child cgroup gets a working pids.max, or null. */
function findPidsCgroup(): string | null {
  for (const base of pidsCgroupCandidates()) {
    const probe = path.join(base, `gatehouse-probe-${process.pid}`);
    try {
      fs.mkdirSync(probe);
    } catch {
      continue;
    }
    try {
      // A kernel file, never created by us: a plain directory (a tmpfs where no cgroup is
      // mounted) has none, and a v2 parent without +pids in subtree_control neither.
      fs.writeFileSync(path.join(probe, 'pids.max'), '16', { flag: 'r+' });
      return base;
    } catch {
      // Not a pids cgroup.
    } finally {
      removeDir(probe);
    }
  }
  return null;
}

export function probeIsolation(limits: SafeModeLimits): IsolationSupport {
  if (process.platform !== 'linux') return { ok: false, reason: 'safe mode needs Linux (prlimit, cgroups)' };
  if (!runs(['prlimit', ...rlimitArgs(limits), 'true'])) {
    return {
      ok: false,
      reason:
        'the kernel refused the safe_mode limits (prlimit --as/--cpu/--nofile failed: is util-linux ' +
        'installed, and are safe_mode.open_files and the others within the hard limits?)',
    };
  }
  const parent = findPidsCgroup();
  let processLimit: ProcessLimit;
  if (parent !== null) processLimit = { kind: 'cgroup', parent };
  else if (process.getuid?.() !== 0) processLimit = { kind: 'rlimit' };
  else {
    return {
      ok: false,
      reason:
        'no process-count limit is possible here: the daemon runs as root (which RLIMIT_NPROC does not ' +
        'bind) and no writable pids cgroup was found',
    };
  }
  const rootless = ['unshare', '--map-current-user', '--net'];
  const netLauncher = runs(['unshare', '--net', 'true'])
    ? ['unshare', '--net']
    : runs([...rootless, 'true'])
      ? rootless
      : [];
  return { ok: true, processLimit, network: netLauncher.length > 0 ? 'none' : 'host', netLauncher };
}

/**
 * The prefix that execs a command under the limits. The RLIMIT_NPROC fallback counts every process
 * of the user, so it allows the user's processes now plus `processes`.
 */
export function commandLauncher(limits: SafeModeLimits, processLimit: ProcessLimit): string[] {
  const args = ['prlimit', ...rlimitArgs(limits)];
  if (processLimit.kind === 'rlimit') args.push(`--nproc=${userProcessCount() + limits.processes}`);
  return args;
}

function userProcessCount(): number {
  const uid = process.getuid?.();
  let count = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.statSync(`/proc/${entry}`).uid === uid) count++;
    } catch {
      // Gone while we looked.
    }
  }
  return count;
}

/** Removes an empty cgroup (or the plain directory a failed probe made). */
export function removeDir(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    // Gone already, or not empty yet (a member still exiting): the kernel keeps it harmlessly.
  }
}

/** The pids of a cgroup (empty when it is gone). */
export function cgroupMembers(dir: string): number[] {
  try {
    return fs
      .readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((l) => l !== '')
      .map(Number);
  } catch {
    return [];
  }
}

/** SIGKILLs every member of the cgroup but `keep`, until none is left (a fork bomb included). */
export function killCgroupMembers(dir: string, keep?: number): void {
  for (let round = 0; round < 100; round++) {
    const members = cgroupMembers(dir).filter((pid) => pid !== keep);
    if (members.length === 0) return;
    for (const pid of members) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
  }
}

/** How many tasks the cgroup still counts against pids.max, or null when it cannot be read. */
function pidsCurrent(dir: string): number | null {
  try {
    return Number(fs.readFileSync(path.join(dir, 'pids.current'), 'utf8').trim());
  } catch {
    return null;
  }
}

/** The threads of `pid` (each counts against pids.max), or 0 once it is gone. */
function threadsOf(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/task`).length;
  } catch {
    return 0;
  }
}

/**
 * Kills every member of the cgroup but `keep`, then waits until the cgroup counts only `keep`'s own
 * threads again, at most `timeoutMs`. A killed process leaves cgroup.procs at once but counts against
 * pids.max until its parent (often init, for a fork bomb's orphans) has reaped it: a command started
 * before then would find the limit still full and fail to fork.
 */
export async function drainCgroup(dir: string, keep: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    killCgroupMembers(dir, keep);
    const current = pidsCurrent(dir);
    if (current === null || current <= threadsOf(keep) || Date.now() >= deadline) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
