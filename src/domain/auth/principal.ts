/**
 * Principals: who a connection is, stamped by the server at a trusted boundary (AUTH-1) and never
 * read from RPC params. A principal is immutable for the life of its connection.
 */

export const CAPABILITIES = [
  'session:create',
  'session:read',
  'session:submit',
  'session:control',
  'session:approve',
  'session:respond',
  'session:operator',
] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** How the identity was verified. */
export type PrincipalProvider =
  'native' | 'dashboard' | 'oidc' | 'internal' | 'legacy_token' | 'worker' | 'api_key';

export interface Principal {
  /** Stable subject within its provider, e.g. `native:owner`. */
  readonly subject: string;
  readonly provider: PrincipalProvider;
  readonly profile: string;
  readonly capabilities: readonly Capability[];
  /**
   * When present, the only logical sessions this principal may reach (a worker-adoption ticket
   * bound to named sessions); every other session is refused with permission_denied.
   */
  readonly sessions?: readonly string[];
  /**
   * A dashboard connection's login (logins.ts: its id, never its token): signing out of that login
   * closes the connection.
   */
  readonly login?: string;
  /** What a person is called (an OIDC sign-in's name claim); shown, never decided on. */
  readonly name?: string;
}

/** Who answered a prompt, as traces name them: `subject@provider` (never a secret). */
export function answerer(principal: Pick<Principal, 'subject' | 'provider'>): string {
  return `${principal.subject}@${principal.provider}`;
}

/** Read, drive and answer a session: what every interactive path gets before creation/operator. */
const SESSION_USE: readonly Capability[] = [
  'session:read',
  'session:submit',
  'session:control',
  'session:approve',
  'session:respond',
];

/** Every capability: interactive native tickets, dashboard logins, the internal credential, legacy token. */
export const OPERATOR_CAPABILITIES: readonly Capability[] = [...CAPABILITIES];

/**
 * A member (issue 30): a person who is not an operator. They create sessions and use those they
 * created or that an operator shared with them (access.ts, shares.ts); they never see anyone else's.
 */
export const MEMBER_CAPABILITIES: readonly Capability[] = ['session:create', ...SESSION_USE];

/** Worker adoption drives a session it was handed; it never creates and is never an operator (AUTH-2). */
export const WORKER_CAPABILITIES: readonly Capability[] = SESSION_USE;

/** A worker-adoption ticket bound to named sessions: read them, submit to them, answer their questions. */
export const BOUND_WORKER_CAPABILITIES: readonly Capability[] = [
  'session:read',
  'session:submit',
  'session:respond',
];

export function makePrincipal(
  subject: string,
  provider: PrincipalProvider,
  profile: string,
  capabilities: readonly Capability[],
  sessions?: readonly string[],
  dashboard?: { readonly login: string; readonly name: string },
): Principal {
  return Object.freeze({
    subject,
    provider,
    profile,
    capabilities: Object.freeze(CAPABILITIES.filter((c) => capabilities.includes(c))),
    ...(sessions !== undefined ? { sessions: Object.freeze([...sessions]) } : {}),
    ...(dashboard !== undefined ? { login: dashboard.login, name: dashboard.name } : {}),
  });
}

export function hasCapability(principal: Principal, capability: Capability): boolean {
  return principal.capabilities.includes(capability);
}

export function isOperator(principal: Principal): boolean {
  return hasCapability(principal, 'session:operator');
}

/** A member: may create sessions, is no operator, and is not bound to named sessions. */
export function isMember(principal: Principal): boolean {
  return (
    !isOperator(principal) && principal.sessions === undefined && hasCapability(principal, 'session:create')
  );
}

/** A principal's public form (what runtime.describe shows); it names no credential. */
export function describePrincipal(principal: Principal): {
  subject: string;
  provider: PrincipalProvider;
  profile: string;
  capabilities: Capability[];
  sessions?: string[];
  name?: string;
} {
  return {
    subject: principal.subject,
    provider: principal.provider,
    profile: principal.profile,
    capabilities: [...principal.capabilities],
    ...(principal.sessions !== undefined ? { sessions: [...principal.sessions] } : {}),
    ...(principal.name !== undefined ? { name: principal.name } : {}),
  };
}
