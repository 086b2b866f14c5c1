/**
 * Where a group commit's log flush runs: on the calling thread or on libuv's thread pool. Pure; the
 * commit group performs the answer.
 *
 * The pool keeps the event loop free while a disk flushes (0.1–5 ms on real disks), but the round
 * trip to it costs tens of microseconds of thread wake-ups on every flush. Where a flush itself costs
 * less than that — tmpfs, or a drive whose cache is safe and answers flushes at once — running it
 * inline is cheaper for everyone. So the group starts inline and times each inline flush; after
 * STRIKES expensive ones in a row (one slow flush on a busy machine proves nothing) it moves to the
 * pool, and every PROBE_EVERY pool flushes it times one inline again, in case the disk got faster —
 * but only when the last pool flush's round trip was at most PROBE_POOL_US: an inline flush costs
 * about what the pool's took, and on a disk that takes tens of milliseconds to flush (a shared one
 * under load) a probe was exactly such a stall of the event loop for every session (issue 32 aim 3),
 * to learn what the pool's own timing already said.
 */

/** An inline flush at or under this many microseconds is cheaper than a trip to the thread pool. */
export const CHEAP_FLUSH_US = 30;
/** Expensive inline flushes in a row that move flushing to the pool. */
export const STRIKES = 3;
/** Pool flushes between two inline probes. */
export const PROBE_EVERY = 1000;
/** A pool flush's round trip (µs) above which no inline probe is worth its stall of the loop. */
export const PROBE_POOL_US = 1000;

export type FlushPlace = 'inline' | 'pool';

export interface FlushHistory {
  place: FlushPlace;
  /** Expensive inline flushes in a row (inline place). */
  strikes: number;
  /** Pool flushes since the last probe (pool place). */
  sinceProbe: number;
  /** The last pool flush's round trip in µs (pool place). */
  lastPoolUs: number;
}

export const FIRST_FLUSH: FlushHistory = { place: 'inline', strikes: 0, sinceProbe: 0, lastPoolUs: 0 };

/** Where the next flush runs. */
export function chooseFlushPlace(history: FlushHistory): FlushPlace {
  if (history.place === 'inline') return 'inline';
  return history.sinceProbe >= PROBE_EVERY && history.lastPoolUs <= PROBE_POOL_US ? 'inline' : 'pool';
}

/** The history after a flush ran at `place`; it reports what it cost (a pool flush: its round trip). */
export function recordFlush(history: FlushHistory, place: FlushPlace, costUs = 0): FlushHistory {
  if (place === 'pool') return { ...history, sinceProbe: history.sinceProbe + 1, lastPoolUs: costUs };
  const cheap = costUs <= CHEAP_FLUSH_US;
  if (history.place === 'pool') {
    // A probe: one cheap flush is enough to come back; an expensive one waits for the next probe.
    return cheap ? FIRST_FLUSH : { ...history, sinceProbe: 0 };
  }
  const strikes = cheap ? 0 : history.strikes + 1;
  return strikes >= STRIKES
    ? { place: 'pool', strikes: 0, sinceProbe: 0, lastPoolUs: 0 }
    : { ...history, strikes };
}
