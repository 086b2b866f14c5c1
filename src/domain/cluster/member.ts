/**
 * One instance of a cluster (SCL-1): it holds the leases of the sessions it runs, renews them with
 * its heartbeat, takes over sessions whose owner stopped renewing, wakes the owner of a session it
 * admitted work for, and hands its sessions over when it drains. The lease rules are lease.ts's;
 * the SQL is the ClusterStore's; the turns are the scheduler's, which asks `owns()` before it runs
 * anything and whose every write the store fences by the lease token.
 *
 *   starting ──start()──▶ active ──drain()──▶ draining ──stop()──▶ stopped
 *                           │
 *                           └─ no renewal for lease_s/2, or the database connection lost ─▶ failed
 *                              (running turns interrupted, no side effect starts, the daemon exits)
 *
 * Wake-ups are notifications on WAKE_CHANNEL (`<owner epoch>:<logical id>`) and RESCAN_CHANNEL (an
 * instance released sessions: look now); the periodic scan is the safety net for lost ones.
 *
 * A session created with an api_key (LOC-5) can run only where that key is, in memory: the instance
 * holding it takes the session's lease at creation and keeps it while idle, so the others wake it
 * instead of taking the session. Once it is gone (killed, drained) the lease is free like any
 * other, and the next turn fails with `launch_credentials_unavailable` wherever it runs.
 */
import { leaseTiming, renewalHealth, type LeaseHolder, type LeaseTiming } from './lease.js';
import type { BotLeaseView, ClusterStore, InstanceView } from '../ports/cluster-store.js';

/** How a member that stopped itself because its renewals stalled names why (its log, its exit). */
export const RENEWALS_STALLED = 'the leases could not be renewed';

export const WAKE_CHANNEL = 'gatehouse_session_wake';
export const RESCAN_CHANNEL = 'gatehouse_cluster_rescan';
/** At most this many sessions are taken over or re-kicked per scan; the next scan goes on. */
const SCAN_BATCH = 100;

export type MemberState = 'starting' | 'active' | 'draining' | 'failed' | 'stopped';

/** What the member needs of the local sessions (domain/local/service.ts and its scheduler). */
export interface MemberSessions {
  recoverSession(logicalId: string): Promise<{ unknown: string[]; resumed: string[] }>;
  kick(logicalId: string): void;
  /** Stops the session's running turn (its lease is gone or about to be); false: none runs. */
  interruptForLease(logicalId: string): boolean;
  /** Whether a turn of the session runs or is being claimed here. */
  busy(logicalId: string): boolean;
  /**
   * Whether this instance holds the session's api_key, given at its creation and kept in memory
   * only (LOC-5): its turns can run nowhere else, so its lease stays here while this instance lives.
   */
  holdsKey(logicalId: string): boolean;
  /** The sessions whose api_key this instance holds. */
  keyedSessions(): Iterable<string>;
}

export interface MemberLog {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/** The cluster as `gatehouse status` shows it. */
export interface ClusterView {
  instance_id: string;
  epoch: number;
  name: string | null;
  lease_s: number;
  /** Sessions this instance holds the lease of. */
  held_sessions: number;
  /** When this view was read (ISO, this instance's clock). */
  as_of: string;
  instances: InstanceView[];
  /** Every chat bot's lease and who holds it (docs/cluster.md, "Chat platforms in a cluster"). */
  bots: BotLeaseView[];
}

export interface ClusterMemberOptions {
  store: ClusterStore;
  leaseS: number;
  name: string | null;
  sessions: MemberSessions;
  log: MemberLog;
  /** Whether the store's connection is lost (it refuses everything from then on). */
  storeFailed(): boolean;
  /** The instance can no longer keep its leases: the daemon must stop (and a supervisor restart it). */
  fatal(reason: string): void;
  /** Each scan's view of the cluster (gateway.json, for `gatehouse status`). */
  onView?(view: ClusterView): void;
  /** A monotonic clock in ms (tests may pass their own). */
  now?: () => number;
}

export class ClusterMember {
  private stateValue: MemberState = 'starting';
  /** Session → the token this instance holds its lease under. */
  private readonly held = new Map<string, number>();
  /** Takes in flight, by session: one at a time. */
  private readonly taking = new Map<string, Promise<void>>();
  /**
   * Sessions taken over whose recovery has not finished: held (its writes are fenced by the lease)
   * but not yet this instance's to run.
   */
  private readonly recovering = new Set<string>();
  private readonly timing: LeaseTiming;
  private readonly now: () => number;
  private lastRenewal: number;
  private timers: NodeJS.Timeout[] = [];
  private unsubscribe: (() => void)[] = [];
  /**
   * When the renewal in flight began (null when none is: it also keeps renewals from overlapping),
   * and the longest gap between two of the watchdog's ticks since the last renewal. A stall's report
   * gives both (issue 33: which stall it was could not be told): a renewal in flight for seconds
   * waited on the store; a long gap between ticks means the event loop itself ran late.
   */
  private heartbeatStartedAt: number | null = null;
  private lastWatch: number | null = null;
  private longestWatchGap = 0;
  private scanning: Promise<void> | null = null;
  private failures = 0;
  private readonly failedListeners: ((why: string) => void)[] = [];

  constructor(private readonly options: ClusterMemberOptions) {
    this.timing = leaseTiming(options.leaseS);
    this.now = options.now ?? (() => performance.now());
    this.lastRenewal = this.now();
  }

  get state(): MemberState {
    return this.stateValue;
  }

  get holder(): LeaseHolder {
    return this.options.store.holder;
  }

  /** Registers the instance, listens for wake-ups, starts the heartbeat and takes over ownerless work. */
  async start(): Promise<{ taken: string[]; unknown: string[]; resumed: string[] }> {
    const { store } = this.options;
    await store.register(this.options.name);
    this.lastRenewal = this.now();
    this.unsubscribe.push(
      store.subscribe(
        WAKE_CHANNEL,
        (payload) => this.woken(payload),
        () => void this.scan(),
      ),
      store.subscribe(
        RESCAN_CHANNEL,
        () => void this.scan(),
        () => void this.scan(),
      ),
    );
    this.stateValue = 'active';
    this.timers.push(
      setInterval(() => void this.heartbeat(), this.timing.heartbeatMs),
      setInterval(() => this.watch(), Math.min(250, this.timing.heartbeatMs)),
      setInterval(() => void this.scan(), this.timing.scanMs),
    );
    for (const timer of this.timers) timer.unref();
    return this.scanOnce();
  }

  /**
   * Whether this instance may run the session now: its lease is held here and, when it was taken
   * over, the dead owner's turn has been recovered (resumed or made unknown, REC-7). Until then no
   * claim and no control may start beside that recovery.
   */
  owns(logicalId: string): boolean {
    return this.stateValue === 'active' && this.held.has(logicalId) && !this.recovering.has(logicalId);
  }

  /**
   * The token of the session's lease held here (the store's fence), or null. Null for every session
   * once the member failed: a stopped turn stores nothing more (not the result of a tool refused or
   * cut short by the stop), so the next owner finds its last step as a kill would have left it.
   */
  token(logicalId: string): number | null {
    return this.stateValue === 'failed' ? null : (this.held.get(logicalId) ?? null);
  }

  /** The timing of this instance's leases (lease_s and what derives from it). */
  get leaseTiming(): LeaseTiming {
    return this.timing;
  }

  /**
   * Told, before the daemon is, when the member fails: what else holds leases of this instance
   * (its chat bots) stops its side effects at once too.
   */
  onFailed(listener: (why: string) => void): void {
    this.failedListeners.push(listener);
  }

  /** Sessions whose lease this instance holds now. */
  get heldCount(): number {
    return this.held.size;
  }

  /**
   * Whether this instance's leases are being renewed (active or draining, a renewal within
   * lease_s / 2): what holds leases through a drain (the chat bots) may still write.
   */
  renewing(): boolean {
    return (
      (this.stateValue === 'active' || this.stateValue === 'draining') &&
      renewalHealth(this.lastRenewal, this.now(), this.timing) === 'ok'
    );
  }

  /**
   * Whether a side effect (a tool call) of the session's running turn may start now: its lease is
   * held here and renewed, also while draining (the drain lets running turns finish). A stall seen
   * here fails the member at once, as the watchdog would at its next tick: the refusal and the stop
   * are one decision, so the refused tool's turn is stopped for the next owner (never settled with a
   * tool that did not run), and no renewal arriving just after can leave the instance half-stopped.
   */
  sideEffectsAllowed(logicalId: string): boolean {
    this.watch();
    return this.renewing() && this.held.has(logicalId);
  }

  /**
   * Work arrived for a session this instance does not hold (admitted here, or a wake-up): take the
   * lease when no live instance holds it, or wake the one that does.
   */
  elsewhere(logicalId: string): void {
    void this.takeOrWake(logicalId, true);
  }

  /**
   * A control (reset, undo, retry, compress, restore) wants the session's slot here: takes the
   * lease when no live instance holds it. False when another instance holds it.
   */
  async acquire(logicalId: string): Promise<boolean> {
    if (this.stateValue !== 'active') return false;
    if (this.owns(logicalId)) return true;
    // A take in flight (from a wake-up, a scan or admitted work) is waited for with its recovery.
    await this.takeOrWake(logicalId, false);
    return this.owns(logicalId);
  }

  /**
   * The session's queue ran empty here: give its lease back, so any instance may take it next —
   * unless its api_key is held here: then the lease stays, and work admitted elsewhere wakes this
   * instance instead of taking the session to one that cannot run it.
   */
  async idle(logicalId: string): Promise<void> {
    if (!this.held.has(logicalId) || this.stateValue !== 'active') return;
    if (this.options.sessions.holdsKey(logicalId)) return;
    // A control holds the session's slot (it kicks the queue again when done): keep the lease.
    if (this.options.sessions.busy(logicalId)) return;
    try {
      if (!(await this.options.store.releaseIdleSession(logicalId))) return;
    } catch (error) {
      this.options.log.warn({ err: error, session_id: logicalId }, 'lease release failed');
      return;
    }
    this.held.delete(logicalId);
    // Kicked again while the release was on its way: take it back (or wake whoever has it).
    if (this.options.sessions.busy(logicalId)) await this.takeOrWake(logicalId, true);
  }

  private takeOrWake(logicalId: string, wakeOwner: boolean): Promise<void> {
    if (this.stateValue !== 'active') return Promise.resolve();
    // First: while a take recovers the session, a kick would find it not owned and come back here.
    // The take kicks the session itself once its recovery is done.
    const pending = this.taking.get(logicalId);
    if (pending) return pending;
    if (this.held.has(logicalId)) {
      this.options.sessions.kick(logicalId);
      return Promise.resolve();
    }
    const work = this.take(logicalId, wakeOwner)
      .catch((error: unknown) =>
        this.options.log.warn({ err: error, session_id: logicalId }, 'could not take a session lease'),
      )
      .finally(() => this.taking.delete(logicalId));
    this.taking.set(logicalId, work);
    return work;
  }

  private async take(logicalId: string, wakeOwner: boolean): Promise<void> {
    const { store, sessions, log } = this.options;
    const result = await store.take('session', logicalId, this.timing.lease_s);
    if (result.kind === 'held') {
      if (wakeOwner) await store.notify(WAKE_CHANNEL, `${result.owner.epoch}:${logicalId}`);
      return;
    }
    this.held.set(logicalId, result.token);
    if (this.stateValue !== 'active') return;
    if (result.kind === 'mine') {
      sessions.kick(logicalId);
      return;
    }
    // Taken over: a control or a claim let in before the recovery has run would act beside the dead
    // owner's turn, which the recovery is about to resume (a compression could move its input out of
    // the transcript it resumes on). owns() is false until then, and acquire() waits for it.
    this.recovering.add(logicalId);
    let recovered: { unknown: string[]; resumed: string[] };
    try {
      recovered = await sessions.recoverSession(logicalId);
    } finally {
      this.recovering.delete(logicalId);
    }
    // Work admitted meanwhile found the take in flight: its queue runs now.
    if (this.owns(logicalId)) sessions.kick(logicalId);
    if (result.previous !== null || recovered.unknown.length > 0 || recovered.resumed.length > 0) {
      log.info(
        {
          session_id: logicalId,
          token: result.token,
          from_epoch: result.previous?.epoch ?? null,
          ...recovered,
        },
        'session taken over',
      );
    }
  }

  /** A wake-up: `<epoch>:<logical id>`, for the instance of that epoch. */
  private woken(payload: string): void {
    const colon = payload.indexOf(':');
    if (colon < 0 || Number(payload.slice(0, colon)) !== this.holder.epoch) return;
    // Not held (released meanwhile): take it, but never wake another in turn (no ping-pong).
    void this.takeOrWake(payload.slice(colon + 1), false);
  }

  private async heartbeat(): Promise<void> {
    if (this.heartbeatStartedAt !== null || (this.stateValue !== 'active' && this.stateValue !== 'draining'))
      return;
    const started = this.now();
    this.heartbeatStartedAt = started;
    try {
      const leases = await this.options.store.heartbeat(this.timing.lease_s);
      this.lastRenewal = started;
      this.longestWatchGap = 0;
      this.failures = 0;
      const still = new Set(leases.filter((l) => l.kind === 'session').map((l) => l.name));
      for (const id of [...this.held.keys()]) {
        if (still.has(id)) continue;
        this.held.delete(id);
        const stopped = this.options.sessions.interruptForLease(id);
        this.options.log.warn(
          { session_id: id, turn_stopped: stopped },
          'session lease lost to another instance',
        );
      }
    } catch (error) {
      if (this.failures++ === 0) this.options.log.warn({ err: error }, 'lease renewal failed');
    } finally {
      this.heartbeatStartedAt = null;
    }
  }

  /** The watchdog: runs on this instance's clock alone, so a hung connection cannot stall it. */
  private watch(): void {
    if (this.stateValue !== 'active' && this.stateValue !== 'draining') return;
    const now = this.now();
    if (this.lastWatch !== null) this.longestWatchGap = Math.max(this.longestWatchGap, now - this.lastWatch);
    this.lastWatch = now;
    if (this.options.storeFailed()) {
      this.fail('the database connection was lost');
    } else if (renewalHealth(this.lastRenewal, now, this.timing) === 'stop') {
      this.fail(`${RENEWALS_STALLED} for more than lease_s/2 (${this.timing.stopAfterMs} ms)`, {
        since_renewal_ms: Math.round(now - this.lastRenewal),
        renewal_in_flight_ms:
          this.heartbeatStartedAt === null ? null : Math.round(now - this.heartbeatStartedAt),
        longest_watch_gap_ms: Math.round(this.longestWatchGap),
      });
    }
  }

  /**
   * The instance can no longer be sure of its leases: every running turn stops now (before another
   * instance may take its sessions), nothing new starts, and the daemon is told to exit.
   */
  private fail(why: string, details: Record<string, unknown> = {}): void {
    this.stateValue = 'failed';
    const stopped = [...this.held.keys()].filter((id) => this.options.sessions.interruptForLease(id));
    this.options.log.error(
      { turns_stopped: stopped.length, sessions: this.held.size, ...details },
      `cluster: ${why}; running turns are stopped and this instance exits so that a supervisor restarts it with a new epoch (the other instances take its sessions over once their leases expire)`,
    );
    for (const listener of this.failedListeners) listener(why);
    this.options.fatal(why);
  }

  private scan(): Promise<void> {
    if (this.stateValue !== 'active') return Promise.resolve();
    this.scanning ??= this.scanOnce()
      .then(() => undefined)
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'cluster scan failed'))
      .finally(() => (this.scanning = null));
    return this.scanning;
  }

  /**
   * Takes over ownerless sessions with work, takes back the free leases of sessions whose api_key is
   * held here, re-kicks queued ones held here, and reads the view.
   */
  private async scanOnce(): Promise<{ taken: string[]; unknown: string[]; resumed: string[] }> {
    const { store } = this.options;
    const done = { taken: [] as string[], unknown: [] as string[], resumed: [] as string[] };
    for (const id of await store.ownerlessSessions(SCAN_BATCH)) {
      if (this.stateValue !== 'active') break;
      const before = this.held.has(id);
      await this.takeOrWake(id, false);
      if (!before && this.held.has(id)) done.taken.push(id);
    }
    // A keyed session's lease is not held here when it was lost to a late renewal, or when its key
    // was supplied here again while another instance held it: take it as soon as it is free.
    const unheld = [...this.options.sessions.keyedSessions()].filter((id) => !this.held.has(id));
    for (const id of unheld.slice(0, SCAN_BATCH)) {
      if (this.stateValue !== 'active') break;
      await this.takeOrWake(id, false);
    }
    for (const id of await store.queuedUnder(SCAN_BATCH)) {
      if (this.held.has(id)) this.options.sessions.kick(id);
    }
    if (this.options.onView) this.options.onView(await this.view());
    return done;
  }

  /** The cluster now: every instance seen within ten lease periods, with its leases. */
  async view(): Promise<ClusterView> {
    return {
      instance_id: this.holder.instance_id,
      epoch: this.holder.epoch,
      name: this.options.name,
      lease_s: this.timing.lease_s,
      held_sessions: this.held.size,
      as_of: new Date().toISOString(),
      instances: await this.options.store.instances(this.timing.lease_s * 10),
      bots: await this.options.store.botLeases(),
    };
  }

  /**
   * Graceful drain, after the running turns finished (or the drain deadline passed): every lease
   * not held by a turn still running is released at once and the others are told to look, so they
   * take the sessions over without waiting for an expiry. A lease of a turn still running is left
   * to expire: that turn is still this instance's until it exits.
   */
  async handOver(stillRunning: readonly string[]): Promise<string[]> {
    if (this.stateValue === 'failed' || this.stateValue === 'stopped') return [];
    this.stateValue = 'draining';
    const { store } = this.options;
    await store.markDraining();
    const released = await store.releaseAll('session', stillRunning);
    for (const id of released) this.held.delete(id);
    await store.notify(RESCAN_CHANNEL, String(this.holder.epoch));
    return released;
  }

  /** Marks the draining state before the turns drain (no new session is taken meanwhile). */
  beginDrain(): void {
    if (this.stateValue === 'active') this.stateValue = 'draining';
  }

  async stop(): Promise<void> {
    const failed = this.stateValue === 'failed';
    this.stateValue = 'stopped';
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    for (const off of this.unsubscribe) off();
    this.unsubscribe = [];
    if (!failed && !this.options.storeFailed()) await this.options.store.markStopped().catch(() => undefined);
  }
}
