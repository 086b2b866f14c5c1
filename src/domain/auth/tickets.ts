/**
 * Single-use, short-lived bootstrap tickets (AUTH-2, AUTH-3).
 *
 * A ticket is 32 random bytes (base64url) handed out once; the book keeps only its SHA-256, so a
 * memory dump or debug view never reveals a redeemable ticket.
 *
 * Two bounded maps. `live`: minted and not yet presented; at most `capacity` of them, and when it is
 * full minting is REFUSED (after dropping expired ones) rather than evicting the oldest: eviction
 * would let a burst of mints silently invalidate a ticket some client is about to redeem, and a
 * refusal is visible and self-healing within one TTL. `spent`: presented tickets, kept until they
 * expire so a replay is told apart from a forgery; it never blocks minting, and past its own bound
 * the oldest is forgotten (its replay then reads as forged: still refused).
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  BOUND_WORKER_CAPABILITIES,
  makePrincipal,
  MEMBER_CAPABILITIES,
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
  /**
   * Worker adoption only: the logical session ids the ticket is bound to. Its connection may read,
   * submit to and answer exactly these sessions, and nothing else (AUTH-4).
   */
  readonly sessions?: readonly string[];
  /** Interactive and dashboard: the ticket speaks for a member, not an operator (issue 30). */
  readonly role?: 'member';
  /** Dashboard only: the login that minted it, and the person's name and sign-in path. */
  readonly login?: { readonly id: string; readonly name: string; readonly path: 'password' | 'oidc' };
}

export type TicketFailure = 'forged' | 'replayed' | 'expired' | 'wrong_purpose';

export type Redemption =
  { ok: true; purpose: TicketPurpose; grant: TicketGrant } | { ok: false; reason: TicketFailure };

export class TicketCapacityError extends Error {
  constructor(
    capacity: number,
    /** `principal`: this subject holds its share of the book; others may still mint. */
    readonly scope: 'book' | 'principal' = 'book',
    subject?: string,
  ) {
    super(
      scope === 'book'
        ? `too many unredeemed tickets (limit ${capacity}); retry in a few seconds, once some expire`
        : `too many unredeemed tickets for ${subject ?? 'this principal'} (limit ${capacity} each); retry in a few seconds, once some expire`,
    );
    this.name = 'TicketCapacityError';
  }
}

interface Entry {
  readonly purpose: TicketPurpose;
  readonly grant: TicketGrant;
  readonly expiresAt: number;
}

export interface TicketBookOptions {
  ttlMs?: number;
  /** Live (unredeemed, unexpired) tickets at once. */
  capacity?: number;
  /** Live tickets one subject may hold at once, so that no principal starves the others. */
  perPrincipal?: number;
  /** Milliseconds since the epoch; injectable so expiry is tested without waiting. */
  now?: () => number;
}

export const DEFAULT_TICKET_TTL_MS = 30_000;
export const DEFAULT_TICKET_CAPACITY = 1024;
export const DEFAULT_TICKETS_PER_PRINCIPAL = 256;
/** Spent tickets remembered for replay detection, as a multiple of the live capacity. */
const SPENT_PER_LIVE = 16;

function digest(ticket: string): string {
  return createHash('sha256').update(ticket, 'utf8').digest('hex');
}

function grantCopy(grant: TicketGrant): TicketGrant {
  const { sessions, ...rest } = grant;
  const copy = rest.login === undefined ? { ...rest } : { ...rest, login: Object.freeze({ ...rest.login }) };
  return sessions === undefined ? copy : { ...copy, sessions: Object.freeze([...sessions]) };
}

export class TicketBook {
  readonly ttlMs: number;
  readonly capacity: number;
  readonly perPrincipal: number;
  private readonly now: () => number;
  /** sha256(ticket) → entry, for tickets not yet presented. Never keyed or valued by the ticket. */
  private readonly live = new Map<string, Entry>();
  /** sha256(ticket) → expiry, for presented tickets, in presentation order. */
  private readonly spent = new Map<string, number>();

  constructor(options: TicketBookOptions = {}) {
    this.ttlMs = options.ttlMs ?? DEFAULT_TICKET_TTL_MS;
    this.capacity = options.capacity ?? DEFAULT_TICKET_CAPACITY;
    this.perPrincipal = Math.min(options.perPrincipal ?? DEFAULT_TICKETS_PER_PRINCIPAL, this.capacity);
    this.now = options.now ?? Date.now;
  }

  mint(purpose: TicketPurpose, grant: TicketGrant): { ticket: string; expiresAt: number } {
    if (this.live.size >= this.capacity || this.heldBy(grant.subject) >= this.perPrincipal) this.sweep();
    if (this.live.size >= this.capacity) throw new TicketCapacityError(this.capacity);
    if (this.heldBy(grant.subject) >= this.perPrincipal)
      throw new TicketCapacityError(this.perPrincipal, 'principal', grant.subject);
    const ticket = randomBytes(32).toString('base64url');
    const expiresAt = this.now() + this.ttlMs;
    this.live.set(digest(ticket), { purpose, grant: grantCopy(grant), expiresAt });
    return { ticket, expiresAt };
  }

  /**
   * Consumes a ticket. Any outcome but `forged` spends it: a ticket offered on the wrong path is
   * burnt too, so a leaked ticket cannot be retried elsewhere. (The gate refuses a request before
   * it gets here — bad transport, Origin, or `protocol_required` — without spending the ticket.)
   */
  redeem(ticket: string, expectedPurposes: readonly TicketPurpose[]): Redemption {
    const key = digest(ticket);
    const entry = this.live.get(key);
    if (!entry) return { ok: false, reason: this.spent.has(key) ? 'replayed' : 'forged' };
    this.live.delete(key);
    this.remember(key, entry.expiresAt);
    if (this.now() >= entry.expiresAt) return { ok: false, reason: 'expired' };
    if (!expectedPurposes.includes(entry.purpose)) return { ok: false, reason: 'wrong_purpose' };
    return { ok: true, purpose: entry.purpose, grant: entry.grant };
  }

  private remember(key: string, expiresAt: number): void {
    if (this.spent.size >= this.capacity * SPENT_PER_LIVE) this.sweep();
    if (this.spent.size >= this.capacity * SPENT_PER_LIVE) {
      const oldest = this.spent.keys().next();
      if (!oldest.done) this.spent.delete(oldest.value);
    }
    this.spent.set(key, expiresAt);
  }

  /** Unredeemed tickets of `subject` stop working (its login ended); returns how many there were. */
  revokeSubject(subject: string): number {
    let revoked = 0;
    for (const [key, entry] of this.live) {
      if (entry.grant.subject !== subject) continue;
      this.live.delete(key);
      this.remember(key, entry.expiresAt);
      revoked++;
    }
    return revoked;
  }

  private heldBy(subject: string): number {
    let held = 0;
    for (const entry of this.live.values()) if (entry.grant.subject === subject) held++;
    return held;
  }

  /** Entries past expiry are dropped; a late replay of one then reads as forged, still refused. */
  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.live) if (now >= entry.expiresAt) this.live.delete(key);
    for (const [key, expiresAt] of this.spent) if (now >= expiresAt) this.spent.delete(key);
  }

  /** Live (unredeemed) tickets: what the capacity counts. */
  get size(): number {
    return this.live.size;
  }

  /** What an operator may inspect: hashes and metadata only. */
  debugDump(): Array<{ hash: string; purpose?: TicketPurpose; expiresAt: number; used: boolean }> {
    return [
      ...[...this.live].map(([hash, e]) => ({
        hash,
        purpose: e.purpose,
        expiresAt: e.expiresAt,
        used: false,
      })),
      ...[...this.spent].map(([hash, expiresAt]) => ({ hash, expiresAt, used: true })),
    ];
  }
}

const PROVIDER_BY_PURPOSE: Record<TicketPurpose, PrincipalProvider> = {
  interactive: 'native',
  'worker-adoption': 'worker',
  dashboard: 'dashboard',
};

/** The principal a redeemed ticket stamps on its connection (AUTH-2, AUTH-3, AUTH-4). */
export function principalForTicket(purpose: TicketPurpose, grant: TicketGrant): Principal {
  if (purpose === 'worker-adoption' && grant.sessions !== undefined) {
    return makePrincipal(grant.subject, 'worker', grant.profile, BOUND_WORKER_CAPABILITIES, grant.sessions);
  }
  if (purpose === 'interactive' && grant.role === 'member')
    return makePrincipal(grant.subject, 'native', grant.profile, MEMBER_CAPABILITIES);
  if (purpose === 'dashboard' && grant.login !== undefined)
    return makePrincipal(
      grant.subject,
      grant.login.path === 'oidc' ? 'oidc' : 'dashboard',
      grant.profile,
      grant.role === 'member' ? MEMBER_CAPABILITIES : OPERATOR_CAPABILITIES,
      undefined,
      { login: grant.login.id, name: grant.login.name },
    );
  const capabilities = purpose === 'worker-adoption' ? WORKER_CAPABILITIES : OPERATOR_CAPABILITIES;
  return makePrincipal(grant.subject, PROVIDER_BY_PURPOSE[purpose], grant.profile, capabilities);
}
