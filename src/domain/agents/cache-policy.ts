/**
 * The agent cache's decisions (SPEC AGC-1, AGC-2), as pure functions of what the cache holds: which
 * entries to evict for capacity (LRU), for idleness (TTL) and under memory pressure. No clock, no
 * I/O, no timers: the cache (agent-cache.ts) gathers the facts, asks here, and carries out the
 * answer; the property tests drive these directly.
 *
 * Invariants of every answer:
 * - an entry mid-turn (`busy`) or whose transcript is not fully written (`!flushed`) is never a
 *   victim: its state is in use, or the store could not rebuild it yet;
 * - victims come in least-recently-used order, each at most once;
 * - a pressure pass never takes one of the `protectRecent` most recently used entries, and takes at
 *   most `maxEvictionsPerPass`.
 * Eviction is soft (AGC-3): a victim's transcript stays in the store and its next turn rebuilds it.
 */

/** Why an entry left the cache; `invalidated`: its transcript changed behind it (never served stale). */
export type EvictionCause = 'ttl' | 'pressure' | 'lru' | 'invalidated';
export const EVICTION_CAUSES: readonly EvictionCause[] = ['ttl', 'pressure', 'lru', 'invalidated'];

/** What the policy knows of one entry. */
export interface EntryFacts {
  readonly key: string;
  /** When a turn last used it (ms, any monotonic clock). */
  readonly lastUsedMs: number;
  /** A turn is using it now. */
  readonly busy: boolean;
  /** Everything it holds is in the store (a rebuild would give the same state). */
  readonly flushed: boolean;
  /** Estimated bytes it holds. */
  readonly bytes: number;
}

export interface CacheLimits {
  /** Most entries kept (AGC-1, default 128). */
  readonly maxSize: number;
  /** An entry unused this long is evicted by the TTL sweep; 0 disables it. */
  readonly idleTtlMs: number;
  readonly maxEvictionsPerPass: number;
  readonly protectRecent: number;
}

export const DEFAULT_LIMITS: CacheLimits = {
  maxSize: 128,
  idleTtlMs: 3_600_000,
  maxEvictionsPerPass: 16,
  protectRecent: 8,
};

function evictable(entry: EntryFacts): boolean {
  return !entry.busy && entry.flushed;
}

/** Least recently used first (ties by key, so the answer does not depend on insertion order). */
export function byRecency(entries: readonly EntryFacts[]): EntryFacts[] {
  return [...entries].sort(
    (a, b) => a.lastUsedMs - b.lastUsedMs || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  );
}

/**
 * Capacity (LRU): the entries to drop so that at most `maxSize` remain after `incoming` more are
 * added. Busy or unflushed entries are skipped, so the cache may stay over size until they settle.
 */
export function capacityVictims(entries: readonly EntryFacts[], limits: CacheLimits, incoming = 0): string[] {
  const excess = entries.length + incoming - Math.max(0, limits.maxSize);
  if (excess <= 0) return [];
  return byRecency(entries)
    .filter(evictable)
    .slice(0, excess)
    .map((e) => e.key);
}

/** TTL: every evictable entry unused for longer than the idle TTL at `nowMs`. */
export function ttlVictims(entries: readonly EntryFacts[], limits: CacheLimits, nowMs: number): string[] {
  if (limits.idleTtlMs <= 0) return [];
  return byRecency(entries)
    .filter((e) => evictable(e) && nowMs - e.lastUsedMs > limits.idleTtlMs)
    .map((e) => e.key);
}

/** The memory reading a pressure pass compares (bytes). A null budget means pressure is off. */
export interface MemoryReading {
  readonly anonBytes: number;
  readonly budgetBytes: number | null;
}

/**
 * The share of the budget a pressure sweep frees below it (a low-water mark): evicting only the
 * excess leaves memory exactly at the budget, so the garbage of the next turns would take it over
 * again before the next sweep; 1/16 below it leaves them room and makes sweeps rarer.
 */
export const PRESSURE_HEADROOM = 1 / 16;

/**
 * Pressure (AGC-2): when anonymous memory is over budget, least-recently-used evictable entries
 * outside the `protectRecent` most recent, until their estimated bytes cover the excess plus the
 * headroom (PRESSURE_HEADROOM of the budget), at most `maxEvictionsPerPass`. Under budget (or with
 * no budget) nothing.
 */
export function pressureVictims(
  entries: readonly EntryFacts[],
  limits: CacheLimits,
  memory: MemoryReading,
): string[] {
  if (memory.budgetBytes === null || memory.anonBytes <= memory.budgetBytes) return [];
  const excess = memory.anonBytes - memory.budgetBytes + memory.budgetBytes * PRESSURE_HEADROOM;
  const ordered = byRecency(entries);
  const candidates = ordered.slice(0, Math.max(0, ordered.length - Math.max(0, limits.protectRecent)));
  const victims: string[] = [];
  let freed = 0;
  for (const entry of candidates) {
    if (victims.length >= limits.maxEvictionsPerPass || freed >= excess) break;
    if (!evictable(entry)) continue;
    victims.push(entry.key);
    freed += entry.bytes;
  }
  return victims;
}
