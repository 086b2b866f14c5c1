/**
 * Single-use, short-lived bootstrap tickets (AUTH-2, AUTH-3).
 *
 * A ticket is 32 random bytes (base64url) handed out once; the book keeps only its SHA-256, so a
 * memory dump or debug view never reveals a redeemable ticket. Redeemed tickets stay in the book,
 * marked used, until they expire: that is how a replay is told apart from a forgery.
 *
 * Bound: at most `capacity` entries (live + used-but-unexpired). When full, expired entries are
 * swept and, if still full, minting is REFUSED rather than evicting the oldest: eviction would let
 * a burst of mints silently invalidate a ticket some client is about to redeem, and refusal is
 * visible and self-healing within one TTL.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  makePrincipal,
  OPERATOR_CAPABILITIES,
  WORKER_CAPABILITIES,
  type Principal,
  type PrincipalProvider,
} from './principal.js';

export const TICKET_PURPOSES = ['interactive', 'worker-adoption', 'dashboard'] as const;
export type TicketPurpose = (typeof TICKET_PURPOSES)[number];

/** Who the ticket speaks for; capabilities are derived from the purpose at redemption. */
export interface TicketGrant {
  readonly subject: string;
  readonly profile: string;
}

export type TicketFailure = 'forged' | 'replayed' | 'expired' | 'wrong_purpose';

export type Redemption =
  { ok: true; purpose: TicketPurpose; grant: TicketGrant } | { ok: false; reason: TicketFailure };

export class TicketCapacityError extends Error {
  constructor(capacity: number) {
    super(`too many unredeemed tickets (limit ${capacity}); retry once some expire`);
    this.name = 'TicketCapacityError';
  }
}

interface Entry {
  readonly purpose: TicketPurpose;
  readonly grant: TicketGrant;
  readonly expiresAt: number;
  used: boolean;
}

export interface TicketBookOptions {
  ttlMs?: number;
  capacity?: number;
  /** Milliseconds since the epoch; injectable so expiry is tested without waiting. */
  now?: () => number;
}

export const DEFAULT_TICKET_TTL_MS = 30_000;
export const DEFAULT_TICKET_CAPACITY = 1024;

function digest(ticket: string): string {
  return createHash('sha256').update(ticket, 'utf8').digest('hex');
}

export class TicketBook {
  readonly ttlMs: number;
  readonly capacity: number;
  private readonly now: () => number;
  /** sha256(ticket) → entry. Never keyed or valued by the ticket itself. */
  private readonly entries = new Map<string, Entry>();

  constructor(options: TicketBookOptions = {}) {
    this.ttlMs = options.ttlMs ?? DEFAULT_TICKET_TTL_MS;
    this.capacity = options.capacity ?? DEFAULT_TICKET_CAPACITY;
    this.now = options.now ?? Date.now;
  }

  mint(purpose: TicketPurpose, grant: TicketGrant): { ticket: string; expiresAt: number } {
    if (this.entries.size >= this.capacity) this.sweep();
    if (this.entries.size >= this.capacity) throw new TicketCapacityError(this.capacity);
    const ticket = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.entries.set(digest(ticket), { purpose, grant: { ...grant }, expiresAt, used: false });
    return { ticket, expiresAt };
  }

  /**
   * Consumes a ticket. Any outcome but `forged` spends it: a ticket offered on the wrong path is
   * burnt too, so a leaked ticket cannot be retried elsewhere.
   */
  redeem(ticket: string, expectedPurposes: readonly TicketPurpose[]): Redemption {
    const key = digest(ticket);
    const entry = this.entries.get(key);
    if (!entry) return { ok: false, reason: 'forged' };
    if (entry.used) return { ok: false, reason: 'replayed' };
    entry.used = true;
    if (this.now() >= entry.expiresAt) return { ok: false, reason: 'expired' };
    if (!expectedPurposes.includes(entry.purpose)) return { ok: false, reason: 'wrong_purpose' };
    return { ok: true, purpose: entry.purpose, grant: entry.grant };
  }

  /** Entries past expiry are dropped; a late replay of one then reads as forged, still refused. */
  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (now >= entry.expiresAt) this.entries.delete(key);
  }

  get size(): number {
    return this.entries.size;
  }

  /** What an operator may inspect: hashes and metadata only. */
  debugDump(): Array<{ hash: string; purpose: TicketPurpose; expiresAt: number; used: boolean }> {
    return [...this.entries].map(([hash, e]) => ({
      hash,
      purpose: e.purpose,
      expiresAt: e.expiresAt,
      used: e.used,
    }));
  }
}

const PROVIDER_BY_PURPOSE: Record<TicketPurpose, PrincipalProvider> = {
  interactive: 'native',
  'worker-adoption': 'worker',
  dashboard: 'dashboard',
};

/** The principal a redeemed ticket stamps on its connection (AUTH-2, AUTH-3, AUTH-4). */
export function principalForTicket(purpose: TicketPurpose, grant: TicketGrant): Principal {
  const capabilities = purpose === 'worker-adoption' ? WORKER_CAPABILITIES : OPERATOR_CAPABILITIES;
  return makePrincipal(grant.subject, PROVIDER_BY_PURPOSE[purpose], grant.profile, capabilities);
}
