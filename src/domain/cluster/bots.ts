/**
 * Chat bots in a cluster (SCL-1, issue 14): one instance at a time receives for a bot — polls
 * Telegram's getUpdates or takes its webhook posts, holds Slack's Socket Mode connection, Discord's
 * gateway — and runs its turns and deliveries. That instance holds the bot's lease (kind `bot`,
 * named `<platform>:<bot id>`, the id non-secret: see botIdOf). The others stand by and take the
 * lease when it is free or expired, on the same timing as session leases (lease.ts).
 *
 * One messaging gateway serves every platform of a profile on one store (its recovery, backlog and
 * delivery ledger span them all), so an instance runs it only while it holds the lease of EVERY bot
 * it is configured with, and holds none while it stands by. A round takes them in name order: of
 * two instances with the same bots, the first to win the first lease wins them all, so they cannot
 * split the bots between them and both wait for ever.
 *
 *   standby ──every lease_s/4, or told another released── round: all taken ─▶ holding
 *      ▲                                                   any held elsewhere: give back what this
 *      │                                                   round took, stay standby
 *   holding: the gateway starts beside the checks (every lease_s/4), which renew the leases meanwhile
 *   holding ──a lease missing at a check, or the member failed──▶ lost (gateway halted, daemon exits)
 *   holding ──drain──▶ released (every bot lease given back at once, the others told)
 */
import { createHash } from 'node:crypto';
import type { LeaseHolder } from './lease.js';

/** The lease name of a bot: `<platform>:<bot id>`. */
export function botLeaseName(platform: string, botId: string): string {
  return `${platform}:${botId}`;
}

/**
 * A non-secret id of the bot a token belongs to, the same on every instance configured with it:
 * Telegram's bot id (the token's part before `:`), Slack's app id (an app-level token is
 * `xapp-<n>-<app id>-…`), Discord's bot user id (a bot token's first part is it in base64). A token
 * of another shape is named by the first 16 hex digits of its SHA-256: one-way, so the lease
 * table never holds anything that would let a reader use the bot.
 */
export function botIdOf(platform: string, token: string): string {
  const t = token.trim();
  if (platform === 'telegram') {
    const id = /^(\d{3,20}):/.exec(t)?.[1];
    if (id) return id;
  } else if (platform === 'slack') {
    const id = /^xapp-\d+-([A-Z0-9]{6,20})-/.exec(t)?.[1];
    if (id) return id;
  } else if (platform === 'discord') {
    const first = t.split('.')[0] ?? '';
    const decoded = Buffer.from(first, 'base64').toString('utf8');
    if (/^\d{15,22}$/.test(decoded)) return decoded;
  }
  return `sha256-${createHash('sha256').update(t).digest('hex').slice(0, 16)}`;
}

/** What one take of a round answered (the ClusterStore's TakeResult, by kind). */
export type BotTake =
  { name: string; kind: 'taken' | 'mine'; token: number } | { name: string; kind: 'held' };

/**
 * The outcome of a round of takes, in name order (a round stops at the first `held`): `hold`
 * with every token when all were taken; otherwise `standby`, giving back what the round took.
 */
export function decideRound(
  names: readonly string[],
  takes: readonly BotTake[],
): { kind: 'hold'; tokens: Map<string, number> } | { kind: 'standby'; giveBack: string[] } {
  const tokens = new Map<string, number>();
  for (const take of takes) {
    if (take.kind === 'held') return { kind: 'standby', giveBack: [...tokens.keys()] };
    tokens.set(take.name, take.token);
  }
  if (names.every((name) => tokens.has(name))) return { kind: 'hold', tokens };
  return { kind: 'standby', giveBack: [...tokens.keys()] };
}

/**
 * Whether the bots are still this instance's at a check while holding: every lease still named
 * under the token it was taken with. A lease whose token changed was taken over.
 */
export function stillHeld(held: ReadonlyMap<string, number>, takes: readonly BotTake[]): boolean {
  const seen = new Map(takes.map((t) => [t.name, t]));
  for (const [name, token] of held) {
    const take = seen.get(name);
    if (take === undefined || take.kind === 'held' || take.token !== token) return false;
  }
  return true;
}

/**
 * The fence the messaging stores and the gateway's confirmations read (docs/cluster.md "Chat
 * platforms in a cluster"). Once it answered no token while the gateway receives (a write refused,
 * or a confirmation check finding the renewals stalled), nothing the gateway was handed is confirmed
 * to a platform again, even should renewals recover: the event may be one whose write was refused,
 * the instance is on its way out, and the next holder gets the event from the platform again.
 */
export class ConfirmationLatch {
  private latched = false;

  constructor(
    private readonly names: readonly string[],
    /** The bot's current lease token, or null when it is not held (or renewals stalled). */
    private readonly held: (name: string) => number | null,
    /** Whether the gateway receives here (before that, no token is the normal standby answer). */
    private readonly receiving: () => boolean,
  ) {}

  /** The token a fenced write checks; no token while receiving latches the refusal. */
  token(name: string): number | null {
    const token = this.held(name);
    if (token === null && this.receiving()) this.latched = true;
    return token;
  }

  /** Whether an inbound event may be confirmed to its platform now. */
  confirmable(): boolean {
    return this.names.every((name) => this.token(name) !== null) && !this.latched;
  }
}

export type BotLeaseState = 'standby' | 'taking' | 'holding' | 'released' | 'lost' | 'stopped';

/** What the bot leases need of the cluster (the ClusterStore and the member's health). */
export interface BotLeaseCluster {
  readonly holder: LeaseHolder;
  take(name: string): Promise<BotTake>;
  release(name: string): Promise<void>;
  /** Tells the other instances to look now (a release). */
  announce(): Promise<void>;
  /** Listens for another instance's announcement; returns the unsubscribe. */
  onAnnounced(listener: () => void): () => void;
  /** Whether this instance may start side effects now (its renewals are healthy). */
  healthy(): boolean;
}

export interface BotLeaseEvents {
  /** Every bot lease is this instance's now: start receiving and recover (a cold start's work). */
  acquired(): Promise<void>;
  /** A bot lease is (or may be) gone: stop receiving and every side effect at once, write nothing. */
  lost(why: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

export class BotLeases {
  private stateValue: BotLeaseState = 'standby';
  private tokens = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;
  private watchdog: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private round: Promise<void> | null = null;
  /** The gateway's start after the bots were taken (events.acquired), while it runs. */
  private acquiring: Promise<void> | null = null;
  /** Why the bots were lost (state `lost`), for the daemon's message. */
  lostWhy: string | null = null;

  constructor(
    /** The lease names of this instance's bots. */
    readonly names: readonly string[],
    private readonly cluster: BotLeaseCluster,
    private readonly events: BotLeaseEvents,
    private readonly timing: { scanMs: number },
  ) {
    this.names = [...new Set(names)].sort();
  }

  get state(): BotLeaseState {
    return this.stateValue;
  }

  /**
   * The token of a bot lease the store fences a write with; null (refuse) unless this instance
   * holds every bot lease and its renewals are healthy.
   */
  token(name: string): number | null {
    if (this.stateValue !== 'holding' || !this.cluster.healthy()) return null;
    return this.tokens.get(name) ?? null;
  }

  /** The leases held with their tokens (empty unless holding). */
  held(): ReadonlyMap<string, number> {
    return this.stateValue === 'holding' ? this.tokens : new Map();
  }

  /** Takes the bots if free (awaited, so a lone instance is receiving when start resolves), then every lease_s / 4. */
  async start(): Promise<void> {
    this.unsubscribe = this.cluster.onAnnounced(() => void this.tick());
    this.timer = setInterval(() => void this.tick(), this.timing.scanMs);
    this.timer.unref();
    // The member's health on a fast clock: a holder whose renewals stall stops before its leases end.
    this.watchdog = setInterval(() => {
      if (this.stateValue === 'holding' && !this.cluster.healthy())
        this.lose('the leases could not be renewed');
    }, 250);
    this.watchdog.unref();
    await this.tick();
    await this.acquiring;
  }

  /** The member failed (its database connection is lost or it could not renew): the bots stop now. */
  memberFailed(why: string): void {
    if (this.stateValue === 'holding' || this.stateValue === 'taking') this.lose(why);
  }

  private tick(): Promise<void> {
    this.round ??= (this.stateValue === 'holding' ? this.check() : this.takeAll())
      .catch((error: unknown) => this.events.warn({ err: error }, 'bot lease round failed'))
      .finally(() => (this.round = null));
    return this.round;
  }

  private async takeAll(): Promise<void> {
    if (this.stateValue !== 'standby' || !this.cluster.healthy()) return;
    this.stateValue = 'taking';
    const takes: BotTake[] = [];
    try {
      for (const name of this.names) {
        const take = await this.cluster.take(name);
        takes.push(take);
        if (take.kind === 'held') break;
      }
    } catch (error) {
      // Unknown which takes landed: give back all (a release of a lease not held changes nothing).
      await this.giveBack(this.names);
      if (this.stateValue === 'taking') this.stateValue = 'standby';
      throw error;
    }
    const decision = decideRound(this.names, takes);
    if ((this.stateValue as BotLeaseState) !== 'taking') return;
    if (decision.kind === 'standby') {
      await this.giveBack(decision.giveBack);
      this.stateValue = 'standby';
      return;
    }
    this.tokens = decision.tokens;
    this.stateValue = 'holding';
    // The gateway's start (connecting, recovery, the owed sends) runs outside the round: a start
    // longer than the lease must not hold up the checks that renew it.
    this.acquiring = this.events.acquired().catch((error: unknown) => {
      if (this.stateValue === 'holding')
        this.lose(
          `the chat platforms could not start: ${error instanceof Error ? error.message : String(error)}`,
        );
    });
  }

  /** While holding: every lease still this instance's under its token (a take renews it). */
  private async check(): Promise<void> {
    const takes: BotTake[] = [];
    for (const name of this.names) takes.push(await this.cluster.take(name));
    if (this.stateValue === 'holding' && !stillHeld(this.tokens, takes)) {
      this.lose('a bot lease was taken over by another instance');
    }
  }

  private lose(why: string): void {
    this.stateValue = 'lost';
    this.lostWhy = why;
    this.events.lost(why);
  }

  private async giveBack(names: readonly string[]): Promise<void> {
    for (const name of names) await this.cluster.release(name).catch(() => undefined);
  }

  /**
   * Graceful drain, once the gateway stopped: every bot lease is released at once and the others
   * told, so one of them takes the bots now rather than at the expiry.
   */
  async release(): Promise<void> {
    const had = this.stateValue === 'holding' || this.stateValue === 'taking';
    this.halt('released');
    if (!had) return;
    // A round under way may still take a lease: it ends first, then everything is given back.
    await this.round?.catch(() => undefined);
    await this.acquiring;
    await this.giveBack(this.names);
    await this.cluster.announce().catch(() => undefined);
  }

  stop(): void {
    this.halt('stopped');
  }

  private halt(state: 'released' | 'stopped'): void {
    if (this.stateValue !== 'lost') this.stateValue = state;
    if (this.timer) clearInterval(this.timer);
    if (this.watchdog) clearInterval(this.watchdog);
    this.timer = this.watchdog = null;
    this.unsubscribe?.();
    this.unsubscribe = null;
  }
}
