/**
 * What a scheduled job does at a tick (issue 28, docs/scheduling.md): the pure decision, separate
 * from the store and the admissions that carry it out (runner.ts).
 *
 * The scheduled instants due since the job's `last_instant` are split three ways:
 *   - stale: older than the freshness window: never fired, counted as missed;
 *   - the catch-up policy picks which of the fresh ones fire: `all` every one, `last` the newest,
 *     `none` the newest only if it fell due while this instance was watching (not while the daemon
 *     was down); the others are missed;
 *   - the overlap policy applies while the job's previous run is still going: `skip` records the
 *     firings as skipped, `queue` waits (nothing is decided) until that run ends. A job fires one
 *     run at a time: with several fresh instants and `all`, the oldest fires now and the next at the
 *     tick after the run ended (`queue`) or is skipped (`skip`).
 * `last_instant` then moves to the newest instant decided, in the same commit as the runs (a
 * compare-and-set, so two deciders never decide one instant twice).
 */
import { instantsBetween, nextAfter, type Schedule } from './schedule.js';

export const CATCH_UP = ['none', 'last', 'all'] as const;
export type CatchUp = (typeof CATCH_UP)[number];
export const OVERLAP = ['skip', 'queue'] as const;
export type Overlap = (typeof OVERLAP)[number];

/** The most fresh instants one decision looks at (catch_up `all` after a long window). */
export const MAX_CATCH_UP = 100;

export interface JobPolicy {
  catch_up: CatchUp;
  /** Instants older than this when decided are missed, whatever the catch-up policy. */
  freshness_s: number;
  overlap: Overlap;
  /** A job whose runs fail this many times in a row is paused with the reason. */
  max_failures: number;
}

export interface DecisionInput {
  schedule: Schedule;
  policy: JobPolicy;
  /** The newest instant already decided; null: none yet (instants after `created_at` count). */
  last_instant: Date | null;
  created_at: Date;
  /** Since when this instance has been watching the job (its start, or when it took the jobs lease). */
  watching_since: Date;
  now: Date;
  /** Whether the job's previous run is still going (decided, not yet settled). */
  busy: boolean;
}

export interface Decision {
  /** Instants to fire now (a run each), oldest first. */
  fire: Date[];
  /** Instants recorded as skipped: the previous run was still going. */
  skipped: Date[];
  /** How many fresh instants the catch-up policy passed over. */
  missed: number;
  /** Whether instants older than the freshness window were passed over too (not counted). */
  stale: boolean;
  /** The new last_instant; null: nothing decided, the job is left as it was. */
  advance_to: Date | null;
}

const NOTHING: Decision = { fire: [], skipped: [], missed: 0, stale: false, advance_to: null };

export function decide(input: DecisionInput): Decision {
  const { schedule, policy, now } = input;
  const after = input.last_instant ?? input.created_at;
  const first = nextAfter(schedule, after);
  if (first === null || first.getTime() > now.getTime()) return NOTHING;
  const freshFrom = new Date(now.getTime() - policy.freshness_s * 1000);
  // Stale instants are only counted as missed: the scan starts at the window, so a long downtime
  // costs no more than the window holds.
  const scanFrom = first.getTime() < freshFrom.getTime() ? new Date(freshFrom.getTime() - 1) : after;
  const { instants: fresh, earlier } = instantsBetween(schedule, scanFrom, now, MAX_CATCH_UP);
  const stale = first.getTime() < freshFrom.getTime() || earlier;
  // Every instant up to now is decided by this call: none lies between the newest fresh one and now.
  const newest = fresh.at(-1) ?? now;
  if (input.busy && policy.overlap === 'queue') return NOTHING;
  let chosen: Date[];
  switch (policy.catch_up) {
    case 'all':
      chosen = fresh;
      break;
    case 'last':
      chosen = fresh.slice(-1);
      break;
    case 'none':
      chosen = fresh.filter((t) => t.getTime() >= input.watching_since.getTime()).slice(-1);
      break;
  }
  const missed = fresh.length - chosen.length;
  if (input.busy) return { fire: [], skipped: chosen, missed, stale, advance_to: newest };
  if (policy.overlap === 'queue' && chosen.length > 1) {
    // One run at a time: the oldest fires; the rest stay due and wait for it to end.
    const fire = chosen[0]!;
    const passed = fresh.filter((t) => t.getTime() < fire.getTime()).length;
    return { fire: [fire], skipped: [], missed: passed, stale, advance_to: fire };
  }
  const [fire, ...rest] = chosen;
  return { fire: fire ? [fire] : [], skipped: rest, missed, stale, advance_to: newest };
}
