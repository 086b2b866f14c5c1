/**
 * Reading the memory the agent cache's pressure sweep compares (SPEC AGC-2): anonymous memory
 * against `agent_cache.memory_high_mb`.
 *
 * - Under a cgroup limit, the cgroup's own anonymous memory (`memory.stat` anon on cgroup v2,
 *   total_rss/rss on v1): the limit applies to the whole group, children included, so that is what
 *   must stay under it. Otherwise the process's own (RssAnon in /proc/self/status).
 * - `auto` budget: the cgroup's memory.high, then memory.max (v1: memory.limit_in_bytes), then the
 *   machine's RAM. A number fixes it (MiB); 0 or `off` disables.
 *
 * The roots (/proc, /sys/fs/cgroup) are injectable so a test can lay out a cgroup in a temp dir.
 * The parsers are pure and exported for the same reason.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { MemoryReading } from '../domain/agents/cache-policy.js';

export interface MemoryRoots {
  /** Default /proc. */
  proc?: string;
  /** Default /sys/fs/cgroup. */
  cgroup?: string;
  /** Default os.totalmem(). */
  totalMemBytes?: () => number;
}

export type MemoryHighSetting = 'auto' | 'off' | number;

/** Values at or above this mean "no limit" (v1 writes PAGE_COUNTER_MAX, about 2^63). */
const UNLIMITED = 2 ** 60;

/** A cgroup limit file: bytes, or null for `max` / no limit / unreadable. */
export function parseLimit(text: string | null): number | null {
  if (text === null) return null;
  const value = text.trim();
  if (value === '' || value === 'max') return null;
  const bytes = Number(value);
  return Number.isFinite(bytes) && bytes > 0 && bytes < UNLIMITED ? bytes : null;
}

/** One field of a `memory.stat` file (`anon 123`), or null. */
export function parseStatField(text: string | null, field: string): number | null {
  if (text === null) return null;
  for (const line of text.split('\n')) {
    const [name, value] = line.trim().split(/\s+/);
    if (name === field && value !== undefined) {
      const n = Number(value);
      return Number.isFinite(n) ? n : null;
    }
  }
  return null;
}

/** RssAnon of a /proc/<pid>/status file, in bytes, or null. */
export function parseRssAnon(text: string | null): number | null {
  const match = text === null ? null : /^RssAnon:\s+(\d+)\s*kB/m.exec(text);
  return match ? Number(match[1]) * 1024 : null;
}

/** The cgroup of this process: the v2 path (`0::/x`) and the v1 memory controller path. */
export function parseProcCgroup(text: string | null): { v2: string | null; v1Memory: string | null } {
  let v2: string | null = null;
  let v1Memory: string | null = null;
  for (const line of (text ?? '').split('\n')) {
    const parts = splitCgroupLine(line);
    if (parts === null) continue;
    const [id, controllers, where] = parts;
    if (id === '0' && controllers === '') v2 = where;
    else if (controllers?.split(',').includes('memory')) v1Memory = where;
  }
  return { v2, v1Memory };
}

/** `id:controllers:path` (the path may itself hold colons), or null for a line of another shape. */
function splitCgroupLine(line: string): [string, string, string] | null {
  const first = line.indexOf(':');
  const second = first < 0 ? -1 : line.indexOf(':', first + 1);
  if (second < 0) return null;
  return [line.slice(0, first), line.slice(first + 1, second), line.slice(second + 1).trim()];
}

function read(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** The cgroup limit and usage that apply to this process, if it runs under a memory limit. */
export interface CgroupMemory {
  version: 1 | 2;
  dir: string;
  limitBytes: number;
  anonBytes: number | null;
}

/**
 * The memory cgroup of this process when it has a limit. A namespaced cgroup often shows its own
 * path as `/` (the group is mounted at the root), so the path is tried under the root, then the
 * root itself.
 */
export function findCgroupMemory(roots: MemoryRoots = {}): CgroupMemory | null {
  const proc = roots.proc ?? '/proc';
  const cgroup = roots.cgroup ?? '/sys/fs/cgroup';
  const own = parseProcCgroup(read(path.join(proc, 'self', 'cgroup')));
  if (own.v2 !== null) {
    for (const dir of candidates(cgroup, own.v2)) {
      if (read(path.join(dir, 'memory.stat')) === null) continue;
      const limit =
        parseLimit(read(path.join(dir, 'memory.high'))) ?? parseLimit(read(path.join(dir, 'memory.max')));
      if (limit === null) continue;
      return {
        version: 2,
        dir,
        limitBytes: limit,
        anonBytes: parseStatField(read(path.join(dir, 'memory.stat')), 'anon'),
      };
    }
  }
  if (own.v1Memory !== null) {
    for (const dir of candidates(path.join(cgroup, 'memory'), own.v1Memory)) {
      const stat = read(path.join(dir, 'memory.stat'));
      if (stat === null) continue;
      const limit = parseLimit(read(path.join(dir, 'memory.limit_in_bytes')));
      if (limit === null) continue;
      return {
        version: 1,
        dir,
        limitBytes: limit,
        anonBytes: parseStatField(stat, 'total_rss') ?? parseStatField(stat, 'rss'),
      };
    }
  }
  return null;
}

function candidates(root: string, where: string): string[] {
  const nested = path.join(root, where);
  return nested === root ? [root] : [nested, root];
}

/** The process's own anonymous memory (RssAnon), falling back to Node's RSS where /proc is absent. */
export function processAnonBytes(roots: MemoryRoots = {}): number {
  return parseRssAnon(read(path.join(roots.proc ?? '/proc', 'self', 'status'))) ?? process.memoryUsage().rss;
}

/** Resolves the setting to a budget in bytes (null: pressure off). */
export function memoryBudget(setting: MemoryHighSetting, roots: MemoryRoots = {}): number | null {
  if (setting === 'off' || setting === 0) return null;
  if (typeof setting === 'number') return setting * 1024 * 1024;
  return findCgroupMemory(roots)?.limitBytes ?? (roots.totalMemBytes ?? os.totalmem)();
}

/**
 * A reader for the housekeeping pass: the budget is resolved once (limits do not move under a
 * running process in practice), the usage is read on every call.
 */
export function memoryReader(setting: MemoryHighSetting, roots: MemoryRoots = {}): () => MemoryReading {
  const budgetBytes = memoryBudget(setting, roots);
  return () => {
    if (budgetBytes === null) return { anonBytes: 0, budgetBytes: null };
    const group = findCgroupMemory(roots);
    return { anonBytes: group?.anonBytes ?? processAnonBytes(roots), budgetBytes };
  };
}

/**
 * Node's full garbage collection, which it exposes only under --expose-gc: the flag is set at run
 * time and the function is taken from a fresh context, where V8 installs it once the flag is on.
 * The flag is turned off again at once (the function stays): V8's flags are part of what its code
 * cache is checked against, and the build writes the bin's cache from a daemon (scripts/bundle.js).
 */
export function exposedGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  v8.setFlagsFromString('--no-expose-gc');
  return gc;
}

/** The share of time forced collections may take (garbageCollector): a quarter, under pressure only. */
export const RECLAIM_TIME_SHARE = 0.25;

/**
 * What the agent cache calls after a pressure sweep evicted agents: a full garbage collection, so
 * the memory the evicted transcripts held goes back to the system before the next reading, instead
 * of being counted (and evicted for again) until the collector happens to run. A full collection
 * stops the event loop for a moment, so after each one the next waits until that collection is at
 * most `timeShare` of the time since it started (at 0.25, a 20 ms collection allows the next one
 * 80 ms after it started). Returns whether it collected.
 */
export function garbageCollector(
  options: { timeShare?: number; collect?: () => void; now?: () => number } = {},
): () => boolean {
  const share = options.timeShare ?? RECLAIM_TIME_SHARE;
  const now = options.now ?? (() => performance.now());
  let collect = options.collect;
  let nextAt = -Infinity;
  return () => {
    const start = now();
    if (start < nextAt) return false;
    collect ??= exposedGc();
    collect();
    const end = now();
    nextAt = start + (end - start) / share;
    return true;
  };
}
