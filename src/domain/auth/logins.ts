/**
 * Dashboard login sessions (AUTH-3): the cookie value is a random token the browser holds; the
 * server keeps only its SHA-256. Password attempts are limited by login-limiter.ts.
 */
import { createHash, randomBytes } from 'node:crypto';

export const DEFAULT_LOGIN_TTL_MS = 12 * 60 * 60 * 1000;
const MAX_LOGINS = 64;

const digest = (token: string): string => createHash('sha256').update(token, 'utf8').digest('hex');

export type LoginLookup = 'ok' | 'forged' | 'expired';

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

/** One stored login: [sha256(token), expiry, password version]. */
export type StoredLogin = [string, number, string];

/**
 * Where open logins outlive the process, so a browser stays logged in across a daemon restart and
 * the dashboard reattaches by itself. It holds only [sha256(token), expiry, password version]
 * triples, oldest first.
 */
export interface LoginStore {
  load(): StoredLogin[];
  save(logins: StoredLogin[]): void;
}

export class DashboardLogins {
  /** sha256(token) → expiry. Insertion order is age order, so the oldest is first. */
  private readonly logins = new Map<string, number>();

  constructor(
    private readonly now: () => number = Date.now,
    readonly ttlMs: number = DEFAULT_LOGIN_TTL_MS,
    private readonly store: LoginStore | null = null,
    /** The password version of the logins opened now (passwordVersion()); others are not loaded. */
    private version: string = passwordVersion(null),
  ) {
    const at = now();
    for (const [hash, expiresAt, opened] of store?.load() ?? [])
      if (expiresAt > at && opened === version) this.logins.set(hash, expiresAt);
  }

  private persist(): void {
    this.store?.save([...this.logins.entries()].map(([hash, expiresAt]) => [hash, expiresAt, this.version]));
  }

  /** The password changed: every login ends (in the store too). Returns how many were open. */
  endAll(version: string): number {
    const ended = this.logins.size;
    this.version = version;
    this.logins.clear();
    this.persist();
    return ended;
  }

  /** Opens a login and returns the token for the cookie. Past the bound, the oldest login ends. */
  open(): string {
    const token = randomBytes(32).toString('base64url');
    if (this.logins.size >= MAX_LOGINS) {
      const oldest = this.logins.keys().next().value;
      if (oldest !== undefined) this.logins.delete(oldest);
    }
    this.logins.set(digest(token), this.now() + this.ttlMs);
    this.persist();
    return token;
  }

  lookup(token: string): LoginLookup {
    const expiresAt = this.logins.get(digest(token));
    if (expiresAt === undefined) return 'forged';
    if (this.now() >= expiresAt) {
      this.logins.delete(digest(token));
      return 'expired';
    }
    return 'ok';
  }

  end(token: string): void {
    if (this.logins.delete(digest(token))) this.persist();
  }

  /** Hashes only: for tests and debug views. */
  hashes(): string[] {
    return [...this.logins.keys()];
  }
}
