/**
 * Who an OpenID Connect sign-in is (issue 30, docs/identity.md): pure decisions over the claims the
 * provider vouched for. The subject is the issuer's stable `sub` (never the e-mail, which a person
 * may change); the role comes from the configured rules, operators first; everyone else is refused.
 */
import type { LoginIdentity } from './logins.js';

/** Who may sign in as what: any listed e-mail, e-mail domain or group matches. */
export interface RoleRule {
  readonly emails: readonly string[];
  readonly domains: readonly string[];
  readonly groups: readonly string[];
}

export interface RoleRules {
  readonly operators: RoleRule;
  readonly members: RoleRule;
  /** The claim holding the person's groups (`groups` unless configured). */
  readonly groupsClaim: string;
}

export type Claims = Readonly<Record<string, unknown>>;

/** The principal subject of an issuer's `sub`: stable for the person at that provider. */
export function oidcSubject(issuer: string, sub: string): string {
  return `oidc:${issuer.replace(/\/+$/, '')}#${sub}`;
}

/** The e-mail the rules may trust: only one the provider says it verified. */
function verifiedEmail(claims: Claims): string | null {
  const email = claims['email'];
  if (typeof email !== 'string' || claims['email_verified'] !== true) return null;
  return email.toLowerCase();
}

function groupsOf(claims: Claims, claim: string): string[] {
  const value = claims[claim];
  if (Array.isArray(value)) return value.filter((g): g is string => typeof g === 'string');
  return typeof value === 'string' ? [value] : [];
}

function matches(rule: RoleRule, email: string | null, groups: readonly string[]): boolean {
  if (email !== null) {
    if (rule.emails.some((e) => e.toLowerCase() === email)) return true;
    const domain = email.slice(email.lastIndexOf('@') + 1);
    if (rule.domains.some((d) => d.toLowerCase().replace(/^@/, '') === domain)) return true;
  }
  return groups.some((g) => rule.groups.includes(g));
}

/** The role the rules give these claims, or null: not allowed to sign in. */
export function roleFor(claims: Claims, rules: RoleRules): 'operator' | 'member' | null {
  const email = verifiedEmail(claims);
  const groups = groupsOf(claims, rules.groupsClaim);
  if (matches(rules.operators, email, groups)) return 'operator';
  if (matches(rules.members, email, groups)) return 'member';
  return null;
}

/** What the dashboard calls the person: their name, else their handle or e-mail, else `sub`. */
export function displayName(claims: Claims): string {
  for (const key of ['name', 'preferred_username', 'email', 'sub']) {
    const value = claims[key];
    if (typeof value === 'string' && value.trim() !== '') return value.trim().slice(0, 200);
  }
  return 'unknown';
}

/** The decision over a verified sign-in: an identity to open a login for, or who was refused. */
export function identityFor(
  issuer: string,
  claims: Claims,
  rules: RoleRules,
): { ok: true; identity: LoginIdentity } | { ok: false; subject: string } {
  const sub = typeof claims['sub'] === 'string' ? claims['sub'] : '';
  const subject = oidcSubject(issuer, sub);
  const role = sub === '' ? null : roleFor(claims, rules);
  if (role === null) return { ok: false, subject };
  return { ok: true, identity: { subject, name: displayName(claims), role, path: 'oidc' } };
}
