/**
 * Dashboard login sessions (AUTH-3): the cookie value is a random token the browser holds; the
 * server keeps only its SHA-256. Password attempts are limited by login-limiter.ts.
 *
 * A login is opened by the owner's password or by an OpenID Connect sign-in (issue 30); each holds
 * the identity it speaks for, so a ws-ticket minted from its cookie stamps that identity, and each
 * has an id (not the token, not its hash) that the connections it opened carry, so signing out can
 * close them.
 */
import { createHash, randomBytes } from 'node:crypto';

export const DEFAULT_LOGIN_TTL_MS = 12 * 60 * 60 * 1000;
const MAX_LOGINS = 64;

const digest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

export type LoginLookup = 'ok' | 'forged' | 'expired';

/** Who a dashboard login speaks for. */
export interface LoginIdentity {
  /** The principal's subject: `dashboard:owner` for the password, `oidc:<issuer>#<sub>` for OIDC. */
  readonly subject: string;
  /** What the dashboard shows; never used for a decision. */
  readonly name: string;
  readonly role: 'operator' | 'member';
  /** How it signed in: the audit trail's path. */
  readonly path: 'password' | 'oidc';
}

/** The password login's version marker for OIDC logins: a password change does not end them. */
const OIDC_VERSION = 'oidc';

/**
 * Which password a login was opened with: a short digest of the password's hash, so a login opened
 * before `gatehouse passwd` is refused after it, also across a restart (issue 25).
 */
export function passwordVersion(passwordHash: string | null): string {
  return createHash('sha256')
    .update(passwordHash ?? '', 'utf8')
    .digest('hex')
    .slice(0, 16);
}

/**
 * One stored login: [sha256(token), expiry, password version or `oidc`, identity of an OIDC
 * login]. A password login's identity is the owner's and is not stored.
 */
export type StoredLogin = [string, number, string] | [string, number, string, LoginIdentity];

/**
 * Where open logins outlive the process, so a browser stays logged in across a daemon restart and
 * the dashboard reattaches by itself. It holds only hashes, expiries, versions and identities
 * (never a token), oldest first.
 */
export interface LoginStore {
  load(): StoredLogin[];
  save(logins: StoredLogin[]): void;
}

export const OWNER_IDENTITY: LoginIdentity = Object.freeze({
  subject: 'dashboard:owner',
  name: 'owner',
  role: 'operator',
  path: 'password',
});

interface Entry {
  readonly expiresAt: number;
  readonly identity: LoginIdentity;
  /** What the login's connections carry (Principal.login): random, never the token's hash. */
  readonly id: string;
}

const newId = (): string => randomBytes(12).toString('base64url');

export class DashboardLogins {
  /** sha256(token) → entry. Insertion order is age order, so the oldest is first. */
  private readonly logins = new Map<string, Entry>();

  constructor(
    private readonly now: () => number = Date.now,
    readonly ttlMs: number = DEFAULT_LOGIN_TTL_MS,
    private readonly store: LoginStore | null = null,
    /** The password version of the logins opened now (passwordVersion()); others are not loaded. */
    private version: string = passwordVersion(null),
  ) {
    const at = now();
    for (const [hash, expiresAt, opened, identity] of store?.load() ?? []) {
      if (expiresAt <= at) continue;
      if (opened === OIDC_VERSION && identity !== undefined)
        this.logins.set(hash, { expiresAt, identity, id: newId() });
      else if (opened === version)
        this.logins.set(hash, { expiresAt, identity: OWNER_IDENTITY, id: newId() });
    }
  }

  private persist(): void {
    this.store?.save(
      [...this.logins.entries()].map(([hash, { expiresAt, identity }]): StoredLogin =>
        identity.path === 'oidc'
          ? [hash, expiresAt, OIDC_VERSION, identity]
          : [hash, expiresAt, this.version],
      ),
    );
  }

  /**
   * The password changed: every password login ends (in the store too); OpenID Connect logins do
   * not hang on the password and stay. Returns how many ended.
   */
  endAll(version: string): number {
    let ended = 0;
    this.version = version;
    for (const [hash, entry] of this.logins)
      if (entry.identity.path === 'password') {
        this.logins.delete(hash);
        ended++;
      }
    this.persist();
    return ended;
  }

  /** Opens a login and returns the token for the cookie. Past the bound, the oldest login ends. */
  open(identity: LoginIdentity = OWNER_IDENTITY): string {
    const token = randomBytes(32).toString('base64url');
    if (this.logins.size >= MAX_LOGINS) {
      const oldest = this.logins.keys().next().value;
      if (oldest !== undefined) this.logins.delete(oldest);
    }
    this.logins.set(digest(token), { expiresAt: this.now() + this.ttlMs, identity, id: newId() });
    this.persist();
    return token;
  }

  lookup(token: string): LoginLookup {
    return this.find(token).state;
  }

  /** The login a cookie names: its identity and id when it is live. */
  find(
    token: string,
  ): { state: 'ok'; identity: LoginIdentity; id: string } | { state: 'forged' | 'expired' } {
    const entry = this.logins.get(digest(token));
    if (entry === undefined) return { state: 'forged' };
    if (this.now() >= entry.expiresAt) {
      this.logins.delete(digest(token));
      return { state: 'expired' };
    }
    return { state: 'ok', identity: entry.identity, id: entry.id };
  }

  /** Ends the login; returns its id (what its connections carry), or null when it was not open. */
  end(token: string): string | null {
    const entry = this.logins.get(digest(token));
    if (entry === undefined) return null;
    this.logins.delete(digest(token));
    this.persist();
    return entry.id;
  }

  /** Hashes only: for tests and debug views. */
  hashes(): string[] {
    return [...this.logins.keys()];
  }
}
