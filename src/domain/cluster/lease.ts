/**
 * Leases (SCL-1): which instance may run a thing — a session's turns now, a chat bot's polling
 * later — decided from what the database holds, on the database's clock. Pure: no store, no clock
 * of its own; the storage operations (storage/postgres/ops/leases.ts) read a lease with the server's
 * `now()`, ask `decideTake`, and apply the answer with a compare-and-set on the token, so two
 * instances deciding at once cannot both win.
 *
 *   no row                         → create  (token 1)
 *   owner = me (same epoch)        → mine    (renew: token unchanged)
 *   no owner (released)            → take    (token + 1)
 *   owner's expiry passed          → take    (token + 1): the owner stopped renewing
 *   otherwise                      → held    (another instance owns it; wake it instead)
 *
 * The token grows by one on every change of owner: a write fenced by an older token never passes.
 *
 * And the owner's own health: an instance that could not renew for `lease_s / 2` stops starting
 * side effects and interrupts its running turns — well before another instance may take its leases
 * (`lease_s` after the last renewal, on the server's clock).
 */

/** What a lease is for: 'session' (a local session's turns) or 'bot' (a chat bot's polling). */
export type LeaseKind = 'session' | 'bot' | 'jobs' | 'delegations';

/** Who holds leases: an instance in one authority epoch. */
export interface LeaseHolder {
  instance_id: string;
  epoch: number;
}

/** A lease row as read, with the database's clock at the read. */
export interface LeaseFacts {
  owner_instance: string | null;
  owner_epoch: number | null;
  token: number;
  /** The lease's expiry and the server's clock at the read (epoch ms). */
  expires_at: number;
  db_now: number;
}

export type TakeDecision =
  | { kind: 'create' }
  | { kind: 'mine'; token: number }
  | { kind: 'take'; from_token: number; token: number; previous: LeaseHolder | null }
  | { kind: 'held'; owner: LeaseHolder; token: number };

export function decideTake(lease: LeaseFacts | null, me: LeaseHolder): TakeDecision {
  if (lease === null) return { kind: 'create' };
  const owner =
    lease.owner_instance === null || lease.owner_epoch === null
      ? null
      : { instance_id: lease.owner_instance, epoch: lease.owner_epoch };
  if (owner !== null && owner.epoch === me.epoch && owner.instance_id === me.instance_id) {
    return { kind: 'mine', token: lease.token };
  }
  if (owner === null || lease.expires_at <= lease.db_now) {
    return { kind: 'take', from_token: lease.token, token: lease.token + 1, previous: owner };
  }
  return { kind: 'held', owner, token: lease.token };
}

/** The timing of one instance's leases, all derived from `cluster.lease_s`. */
export interface LeaseTiming {
  lease_s: number;
  /**
   * How often the heartbeat renews the instance row and every lease (lease_s / 6): three renewals
   * fit before the stop at lease_s / 2, so one late or slow renewal on a loaded machine does not
   * stop the instance (with lease_s / 3 a single renewal slower than lease_s / 6 did).
   */
  heartbeatMs: number;
  /** Past this time without a successful renewal the instance stops its turns (lease_s / 2). */
  stopAfterMs: number;
  /**
   * How often expired leases and ownerless work are looked for (lease_s / 4): a dead owner's
   * sessions are taken over within about 1.25 × lease_s of its death (its last renewal was at most
   * lease_s / 6 before it), not the 2 × lease_s a scan per lease period allowed.
   */
  scanMs: number;
}

export function leaseTiming(leaseS: number): LeaseTiming {
  if (!(leaseS > 0)) throw new Error(`lease_s must be positive (got ${leaseS})`);
  return {
    lease_s: leaseS,
    heartbeatMs: Math.round((leaseS * 1000) / 6),
    stopAfterMs: Math.round((leaseS * 1000) / 2),
    scanMs: Math.round((leaseS * 1000) / 4),
  };
}

/**
 * The instance's health from its last successful renewal (both on the instance's own monotonic
 * clock: the renewal's start, so a slow answer counts against it). `stop`: it may no longer start
 * side effects and must interrupt what runs, since its leases may be near their expiry.
 */
export function renewalHealth(lastRenewalStart: number, now: number, timing: LeaseTiming): 'ok' | 'stop' {
  return now - lastRenewalStart > timing.stopAfterMs ? 'stop' : 'ok';
}
