/**
 * The storage contract of a cluster (SCL-1): the instances sharing one database, the leases they
 * hold (generic: kind + name), and the wake-ups between them. Only PostgreSQL carries it (a
 * cluster needs a shared server); the domain (domain/cluster/) drives it.
 */
import type { LeaseHolder, LeaseKind } from '../cluster/lease.js';

/** A lease this instance holds. */
export interface HeldLease {
  kind: LeaseKind;
  name: string;
  token: number;
}

export type TakeResult =
  /** Taken under a new token; `previous`: the owner it was taken from (null: free or released). */
  | { kind: 'taken'; token: number; previous: LeaseHolder | null; fresh: boolean }
  /** Already this instance's: renewed, token unchanged. */
  | { kind: 'mine'; token: number }
  /** A live owner holds it. */
  | { kind: 'held'; owner: LeaseHolder };

/** One instance as `gatehouse status` shows it. Ages are on the server's clock. */
export interface InstanceView {
  instance_id: string;
  epoch: number;
  name: string | null;
  url: string | null;
  started_at: string;
  heartbeat_age_ms: number;
  draining: boolean;
  stopped: boolean;
  /** Leases held now (unexpired), by kind. */
  leases: Record<string, number>;
}

/** A bot's lease as `gatehouse status` shows it (docs/cluster.md, "Chat platforms in a cluster"). */
export interface BotLeaseView {
  /** `<platform>:<bot id>`. */
  name: string;
  token: number;
  /** The epoch of the instance holding it now, and that instance's name; null: free or expired. */
  owner_epoch: number | null;
  owner_name: string | null;
}

/** How the local store fences a write: this instance, and the token it holds a session's lease under. */
export interface LeaseFence {
  holder: LeaseHolder;
  /** The token of the session's lease this instance holds, or null when it holds none. */
  token(logicalId: string): number | null;
}

/**
 * How the messaging stores fence a write in a cluster: this instance, the names of its bots'
 * leases, and the token it holds each under (null: it does not hold it now, or may not write).
 */
export interface BotFence {
  holder: LeaseHolder;
  names: readonly string[];
  token(name: string): number | null;
}

/** A chat platform's write refused: this instance no longer holds the bot's lease (SCL-1). */
export class BotLeaseLost extends Error {
  constructor(name: string) {
    super(`this instance no longer holds the lease of bot ${name}: the write is refused`);
    this.name = 'BotLeaseLost';
  }
}

export interface ClusterStore {
  readonly holder: LeaseHolder;
  register(name: string | null): Promise<void>;
  setUrl(url: string): Promise<void>;
  /** Renews the instance's heartbeat and every lease it holds, in one statement; the leases held now. */
  heartbeat(leaseS: number): Promise<HeldLease[]>;
  take(kind: LeaseKind, name: string, leaseS: number): Promise<TakeResult>;
  release(kind: LeaseKind, name: string): Promise<boolean>;
  /** Releases every lease of `kind` except those named in `keep`; the names released. */
  releaseAll(kind: LeaseKind, keep: readonly string[]): Promise<string[]>;
  /** Releases a session's lease only while nothing of it is queued or running. */
  releaseIdleSession(logicalId: string): Promise<boolean>;
  /** Sessions with queued or running work whose lease no live instance holds. */
  ownerlessSessions(limit: number): Promise<string[]>;
  /** Sessions this instance holds with queued admissions. */
  queuedUnder(limit: number): Promise<string[]>;
  markDraining(): Promise<void>;
  markStopped(): Promise<void>;
  instances(forgetAfterS: number): Promise<InstanceView[]>;
  /** Every bot lease and who holds it now. */
  botLeases(): Promise<BotLeaseView[]>;
  /** Sends a wake-up to every instance listening on `channel`. */
  notify(channel: string, payload: string): Promise<void>;
  /** Listens on `channel`; `resubscribed` is called after a lost listening connection came back. */
  subscribe(channel: string, handler: (payload: string) => void, resubscribed?: () => void): () => void;
}
