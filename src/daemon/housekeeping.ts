/**
 * The housekeeping watcher (SPEC AGC-1..4, seed 002 §10): one timer in the daemon that, on every
 * pass, evicts agents idle past their TTL, compares anonymous memory with the budget and evicts
 * least-recently-used agents over it, releases the in-memory state of sessions nobody views and
 * nothing runs, trims the cluster's shared event stream to its retention (cluster mode), and once
 * an hour prunes routing entries older than `sessions.max_age_days`.
 *
 * It never ends a transcript (AGC-4): an evicted agent is rebuilt from the store on its next turn,
 * a released hub on its next viewer or event, and a pruned route only closes its physical session
 * (the transcript stays in the store and in search).
 *
 *   stopped ──start──▶ waiting ──timer──▶ sweeping ──pass done──▶ waiting … ──stop──▶ stopped
 *
 * A pass is synchronous except the prune; `stop` (on drain) clears the timer, and a pass under
 * way finishes without arming another.
 */
import type { AgentCache } from '../domain/agents/agent-cache.js';
import type { MemoryReading } from '../domain/agents/cache-policy.js';
import { TypedEmitter } from '../domain/events/typed-emitter.js';

export const PRUNE_INTERVAL_MS = 3_600_000;

export interface HousekeepingReport {
  ttl_evicted: number;
  pressure_evicted: number;
  memory: MemoryReading;
  /** Sessions whose idle in-memory state (hub, views) was released. */
  released: number;
  /** Routing entries pruned (null: no prune this pass). */
  pruned: string[] | null;
  /** Events dropped from the cluster's shared stream past their retention (null: not in a cluster). */
  events_pruned: number | null;
}

export interface HousekeepingEvents extends Record<string, unknown> {
  'housekeeping:pass': HousekeepingReport;
  'housekeeping:error': { error: unknown };
}

export interface HousekeepingOptions {
  intervalMs: number;
  agents: AgentCache;
  readMemory: () => MemoryReading;
  /** Releases idle per-session state (LocalSessions.releaseIdle); returns how many. */
  releaseIdle: () => number;
  /** 0: never prune. */
  maxAgeDays: number;
  /** Cluster mode: trims each session's shared event stream to its retention (count and bytes). */
  pruneEvents?: () => Promise<number>;
  /** SessionStore.pruneOldEntries, with the live-process check bound in. */
  prune: (maxAgeDays: number) => Promise<string[]>;
  /** Told after each pass (the daemon republishes the cache counters). */
  afterPass?: (report: HousekeepingReport) => void;
  /** Milliseconds; injectable for tests. */
  now?: () => number;
}

type State = { kind: 'stopped' } | { kind: 'waiting'; timer: NodeJS.Timeout } | { kind: 'sweeping' };

export class Housekeeping {
  readonly events = new TypedEmitter<HousekeepingEvents>();
  private state: State = { kind: 'stopped' };
  private lastPruneMs: number | null = null;
  private readonly now: () => number;
  private stopRequested = false;

  constructor(private readonly options: HousekeepingOptions) {
    this.now = options.now ?? Date.now;
  }

  get stateName(): State['kind'] {
    return this.state.kind;
  }

  start(): void {
    if (this.state.kind !== 'stopped') throw new Error(`housekeeping: start while ${this.state.kind}`);
    this.stopRequested = false;
    this.arm();
  }

  /** On drain: no further pass starts. */
  stop(): void {
    this.stopRequested = true;
    if (this.state.kind === 'waiting') clearTimeout(this.state.timer);
    if (this.state.kind !== 'sweeping') this.state = { kind: 'stopped' };
  }

  /** One pass now (the timer calls this; tests and operators may too). */
  async pass(): Promise<HousekeepingReport> {
    const ttl = this.options.agents.sweepIdle();
    const memory = this.options.readMemory();
    const pressure = this.options.agents.sweepPressure(memory);
    const released = this.options.releaseIdle();
    const eventsPruned = this.options.pruneEvents ? await this.options.pruneEvents() : null;
    let pruned: string[] | null = null;
    const now = this.now();
    if (
      this.options.maxAgeDays > 0 &&
      (this.lastPruneMs === null || now - this.lastPruneMs >= PRUNE_INTERVAL_MS)
    ) {
      this.lastPruneMs = now;
      pruned = await this.options.prune(this.options.maxAgeDays);
    }
    const report: HousekeepingReport = {
      ttl_evicted: ttl.length,
      pressure_evicted: pressure.length,
      memory,
      released,
      pruned,
      events_pruned: eventsPruned,
    };
    this.options.afterPass?.(report);
    this.events.emit('housekeeping:pass', report);
    return report;
  }

  private arm(): void {
    const timer = setTimeout(() => void this.tick(), this.options.intervalMs);
    timer.unref();
    this.state = { kind: 'waiting', timer };
  }

  private async tick(): Promise<void> {
    if (this.state.kind !== 'waiting') return;
    this.state = { kind: 'sweeping' };
    try {
      await this.pass();
    } catch (error) {
      this.events.emit('housekeeping:error', { error });
    }
    if (this.stopRequested) this.state = { kind: 'stopped' };
    else this.arm();
  }
}
