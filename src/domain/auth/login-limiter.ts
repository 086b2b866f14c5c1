/**
 * The dashboard login limiter (AUTH-3, issue 12 item 1): pure decisions over a clock, no I/O.
 * Three bounds, each against a different attack:
 *
 * - per client (keyed by peer address): a few attempts free, then an exponential backoff after
 *   each further failure (1 s, 2 s, 4 s … capped at one minute). A success clears it, and it is
 *   forgotten a while after the last failure. Another address's flood never delays the owner.
 * - global attempts: a token bucket (a burst of 10, one more each second), so many addresses
 *   together get about one guess a second; it refills within seconds once a flood stops, so it
 *   can never lock the owner out for long.
 * - concurrent verifications: at most two scrypt hashes run at once. Each occupies a libuv pool
 *   thread (and 32 MiB) for about 100 ms; unbounded, a flood fills the pool that file I/O shares and
 *   stalls every turn. The excess is refused at once, before hashing.
 *
 * An attempt is counted the moment it is admitted, before the caller awaits anything (the body,
 * the hash), so a burst cannot slip in between a check and the failure it would have recorded.
 */

export interface LoginLimits {
  /** Attempts a client may have failed or in flight before its backoff starts. */
  readonly freeAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** A client's record is dropped this long after its last failure. */
  readonly forgetAfterMs: number;
  readonly globalBurst: number;
  /** One global attempt is regained every this many ms. */
  readonly globalRefillMs: number;
  readonly maxConcurrentVerifications: number;
  /** Clients remembered at once; past it the oldest record is dropped (the global bound remains). */
  readonly maxClients: number;
}

export const DEFAULT_LOGIN_LIMITS: LoginLimits = {
  freeAttempts: 5,
  baseDelayMs: 1000,
  maxDelayMs: 60_000,
  forgetAfterMs: 15 * 60_000,
  globalBurst: 10,
  globalRefillMs: 1000,
  maxConcurrentVerifications: 2,
  maxClients: 10_000,
};

/** Why an attempt was refused: this client backs off, everyone backs off, or hashing is saturated. */
export type RefusalScope = 'client' | 'global' | 'busy';

export type Admission =
  | { readonly admitted: true }
  | { readonly admitted: false; readonly scope: RefusalScope; readonly retryAfterMs: number };

/** How an admitted attempt ended: the password matched, did not, or was never checked. */
export type LoginOutcome = 'accepted' | 'refused' | 'abandoned';

interface ClientRecord {
  failures: number;
  lastFailureAt: number;
  inFlight: number;
}

export class LoginLimiter {
  private readonly clients = new Map<string, ClientRecord>();
  private tokens: number;
  private tokensAt: number;
  private verifying = 0;

  constructor(
    private readonly now: () => number = Date.now,
    readonly limits: LoginLimits = DEFAULT_LOGIN_LIMITS,
  ) {
    this.tokens = limits.globalBurst;
    this.tokensAt = now();
  }

  /** Backoff owed after `failures` failures: none within the free attempts, then doubling. */
  delayAfter(failures: number): number {
    const { freeAttempts, baseDelayMs, maxDelayMs } = this.limits;
    if (failures < freeAttempts) return 0;
    return Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(failures - freeAttempts, 30));
  }

  /** Decides on one attempt and, when admitted, counts it. Every admission must be settled. */
  admit(client: string): Admission {
    const now = this.now();
    const record = this.recordOf(client, now);
    const clientWait = this.clientWait(record, now);
    if (clientWait > 0) return { admitted: false, scope: 'client', retryAfterMs: clientWait };
    this.refill(now);
    if (this.tokens < 1) {
      const retryAfterMs = Math.ceil((1 - this.tokens) * this.limits.globalRefillMs);
      return { admitted: false, scope: 'global', retryAfterMs };
    }
    this.tokens -= 1;
    record.inFlight += 1;
    this.clients.set(client, record);
    return { admitted: true };
  }

  /** Takes a verification slot for an admitted attempt; false means answer `busy`, no hashing. */
  beginVerification(): boolean {
    if (this.verifying >= this.limits.maxConcurrentVerifications) return false;
    this.verifying += 1;
    return true;
  }

  endVerification(): void {
    if (this.verifying === 0) throw new Error('endVerification without beginVerification');
    this.verifying -= 1;
  }

  /** The wait to suggest when every verification slot is taken: one hash takes well under that. */
  get busyRetryMs(): number {
    return this.limits.baseDelayMs;
  }

  settle(client: string, outcome: LoginOutcome): void {
    const record = this.clients.get(client);
    // Absent only when more than maxClients others pushed this record out meanwhile.
    if (!record || record.inFlight === 0) return;
    record.inFlight -= 1;
    if (outcome === 'accepted') {
      record.failures = 0;
      if (record.inFlight === 0) this.clients.delete(client);
    } else if (outcome === 'refused') {
      record.failures += 1;
      record.lastFailureAt = this.now();
    }
  }

  /** For tests and debug views. */
  get verificationsRunning(): number {
    return this.verifying;
  }

  private recordOf(client: string, now: number): ClientRecord {
    const known = this.clients.get(client);
    if (known && (known.inFlight > 0 || now - known.lastFailureAt < this.limits.forgetAfterMs)) {
      return known;
    }
    if (known) this.clients.delete(client);
    if (this.clients.size >= this.limits.maxClients) {
      const oldest = this.clients.keys().next().value;
      if (oldest !== undefined) this.clients.delete(oldest);
    }
    return { failures: 0, lastFailureAt: now, inFlight: 0 };
  }

  /**
   * Attempts in flight count as failures until they settle. Within the free attempts a client waits
   * for nothing; past them it waits out the backoff of its failures with nothing in flight.
   */
  private clientWait(record: ClientRecord, now: number): number {
    const pending = record.failures + record.inFlight;
    if (pending < this.limits.freeAttempts) return 0;
    if (record.inFlight > 0) return Math.max(this.limits.baseDelayMs, this.delayAfter(pending));
    return Math.max(0, record.lastFailureAt + this.delayAfter(record.failures) - now);
  }

  private refill(now: number): void {
    const regained = (now - this.tokensAt) / this.limits.globalRefillMs;
    this.tokens = Math.min(this.limits.globalBurst, this.tokens + regained);
    this.tokensAt = now;
  }
}
