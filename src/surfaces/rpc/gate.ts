/**
 * The trusted boundary (AUTH-1..3, AUTH-6): decides who a WebSocket upgrade or an HTTP mutation
 * speaks for, from transport facts only (peer address, Host, Origin, subprotocols, query, cookie).
 * Decisions return an HttpRejection or a Principal; the I/O around them lives in server.ts.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { DashboardLogins } from '../../domain/auth/logins.js';
import {
  makePrincipal,
  MEMBER_CAPABILITIES,
  OPERATOR_CAPABILITIES,
  type Principal,
} from '../../domain/auth/principal.js';
import { principalForTicket, type TicketBook, type TicketPurpose } from '../../domain/auth/tickets.js';
import { HttpRejection } from '../../protocol/errors.js';

export const SUBPROTOCOL = 'gatehouse.v1';
export const TICKET_SUBPROTOCOL_PREFIX = 'gatehouse-ticket.';
/** Carries the process-lifetime internal credential of clients the daemon spawns itself. */
export const INTERNAL_SUBPROTOCOL_PREFIX = 'gatehouse-internal.';
export const SESSION_COOKIE = 'gatehouse_session';

export const DASHBOARD_SUBJECT = 'dashboard:owner';
export const LEGACY_SUBJECT = 'legacy:token';
export const INTERNAL_SUBJECT = 'internal:daemon';

export interface GateConfig {
  readonly allowRemote: boolean;
  /**
   * AUTH-6: with allowRemote, the addresses of the authenticating proxy in front of the listener;
   * when given, no other remote peer may connect. Empty: any peer (the listener serves TLS).
   */
  readonly trustedProxies?: readonly string[];
  /** Exact origins (scheme://host[:port]) allowed besides the listener's own. */
  readonly allowedOrigins: readonly string[];
  readonly profile: string;
  readonly legacyToken: { readonly enabled: boolean; readonly token: string } | null;
  /** The daemon's own per-process credential for clients it spawns, or null when there are none. */
  readonly internalCredential: string | null;
}

export interface GateCredentials {
  readonly tickets: TicketBook;
  readonly logins: DashboardLogins;
}

/** Transport facts of one request; nothing else may influence who the caller is. */
export interface RequestFacts {
  readonly remoteAddress: string | undefined;
  readonly host: string | undefined;
  readonly origin: string | undefined;
  readonly subprotocols: readonly string[];
  readonly query: URLSearchParams;
  readonly cookies: ReadonlyMap<string, string>;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

export function isLoopbackAddress(address: string | undefined): boolean {
  if (address === undefined) return false;
  return address === '::1' || /^(::ffff:)?127\.\d+\.\d+\.\d+$/.test(address);
}

export function parseSubprotocols(header: string | undefined): string[] {
  return (header ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p.length > 0);
}

export function parseCookies(header: string | undefined): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0) cookies.set(part.slice(0, at).trim(), part.slice(at + 1).trim());
  }
  return cookies;
}

function hostnameOf(hostHeader: string): string | null {
  try {
    return new URL(`http://${hostHeader}`).hostname;
  } catch {
    return null;
  }
}

/**
 * Peer and Host checks for every request. The Host check defeats DNS rebinding: a page on a
 * hostile name that resolves to 127.0.0.1 is same-origin with itself, but its Host is not ours.
 */
export function checkTransport(facts: RequestFacts, config: GateConfig): HttpRejection | null {
  if (config.allowRemote) {
    const proxies = config.trustedProxies ?? [];
    if (proxies.length === 0 || isLoopbackAddress(facts.remoteAddress)) return null;
    const peer = facts.remoteAddress?.replace(/^::ffff:/, '');
    return peer !== undefined && proxies.includes(peer) ? null : new HttpRejection('remote_denied');
  }
  if (!isLoopbackAddress(facts.remoteAddress)) return new HttpRejection('remote_denied');
  const hostname = facts.host === undefined ? null : hostnameOf(facts.host);
  const allowedHosts = config.allowedOrigins.map((o) => hostnameOf(new URL(o).host));
  if (hostname === null || !(isLoopbackHost(hostname) || allowedHosts.includes(hostname))) {
    return new HttpRejection('host_denied');
  }
  return null;
}

/** Absent Origin (native clients) passes unless `required`; otherwise same-origin or listed. */
export function checkOrigin(
  facts: RequestFacts,
  config: GateConfig,
  required: boolean,
): HttpRejection | null {
  if (facts.origin === undefined)
    return required ? new HttpRejection('origin_denied', 'Origin header required') : null;
  if (config.allowedOrigins.includes(facts.origin)) return null;
  try {
    if (facts.host !== undefined && new URL(facts.origin).host === facts.host) return null;
  } catch {
    // An unparseable Origin is simply not allowed.
  }
  return new HttpRejection('origin_denied');
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

function sameSecret(offered: string, expected: string): boolean {
  return timingSafeEqual(sha256(offered), sha256(expected));
}

function redeem(
  tickets: TicketBook,
  ticket: string,
  purposes: readonly TicketPurpose[],
): Principal | HttpRejection {
  const outcome = tickets.redeem(ticket, purposes);
  if (!outcome.ok) return new HttpRejection(outcome.reason);
  return principalForTicket(outcome.purpose, outcome.grant);
}

/**
 * Who a WebSocket upgrade speaks for. Exactly one credential path is taken, in this order:
 * internal credential (subprotocol) → native ticket (subprotocol) → dashboard ws-ticket
 * (`?ticket=`) → legacy `?token=` → cookie.
 * Each path accepts only its own ticket purposes, so a ticket on the wrong path is wrong_purpose.
 */
export function authenticateUpgrade(
  facts: RequestFacts,
  config: GateConfig,
  credentials: GateCredentials,
): Principal | HttpRejection {
  const rejected = checkTransport(facts, config) ?? checkOrigin(facts, config, false);
  if (rejected) return rejected;

  const internalProtocol = facts.subprotocols.find((p) => p.startsWith(INTERNAL_SUBPROTOCOL_PREFIX));
  if (internalProtocol !== undefined) {
    if (!facts.subprotocols.includes(SUBPROTOCOL)) return new HttpRejection('protocol_required');
    const offered = internalProtocol.slice(INTERNAL_SUBPROTOCOL_PREFIX.length);
    if (config.internalCredential === null || !sameSecret(offered, config.internalCredential)) {
      return new HttpRejection('forged');
    }
    return makePrincipal(INTERNAL_SUBJECT, 'internal', config.profile, OPERATOR_CAPABILITIES);
  }
  const ticketProtocol = facts.subprotocols.find((p) => p.startsWith(TICKET_SUBPROTOCOL_PREFIX));
  if (ticketProtocol !== undefined) {
    if (!facts.subprotocols.includes(SUBPROTOCOL)) return new HttpRejection('protocol_required');
    const ticket = ticketProtocol.slice(TICKET_SUBPROTOCOL_PREFIX.length);
    return redeem(credentials.tickets, ticket, ['interactive', 'worker-adoption']);
  }
  const wsTicket = facts.query.get('ticket');
  if (wsTicket !== null) return redeem(credentials.tickets, wsTicket, ['dashboard']);

  const token = facts.query.get('token');
  if (token !== null) {
    if (!config.legacyToken?.enabled) return new HttpRejection('legacy_token_disabled');
    if (!sameSecret(token, config.legacyToken.token)) return new HttpRejection('forged');
    // The verified legacy token also allows creation (AUTH-3) and is an operator (AUTH-4).
    return makePrincipal(LEGACY_SUBJECT, 'legacy_token', config.profile, OPERATOR_CAPABILITIES);
  }
  const cookie = facts.cookies.get(SESSION_COOKIE);
  if (cookie !== undefined) return dashboardPrincipal(cookie, config, credentials.logins);
  return new HttpRejection('missing');
}

export function dashboardPrincipal(
  cookie: string,
  config: GateConfig,
  logins: DashboardLogins,
): Principal | HttpRejection {
  const found = logins.find(cookie);
  if (found.state !== 'ok') return new HttpRejection(found.state);
  const { identity } = found;
  return makePrincipal(
    identity.subject,
    identity.path === 'oidc' ? 'oidc' : 'dashboard',
    config.profile,
    identity.role === 'member' ? MEMBER_CAPABILITIES : OPERATOR_CAPABILITIES,
    undefined,
    { login: found.id, name: identity.name },
  );
}

/**
 * The HTTP mutation gate: a live dashboard cookie AND a present, allowed Origin. Browsers always
 * send Origin on POST, so its absence means the caller is not the dashboard page.
 */
export function authenticateMutation(
  facts: RequestFacts,
  config: GateConfig,
  logins: DashboardLogins,
): Principal | HttpRejection {
  const rejected = checkTransport(facts, config) ?? checkOrigin(facts, config, true);
  if (rejected) return rejected;
  const cookie = facts.cookies.get(SESSION_COOKIE);
  if (cookie === undefined) return new HttpRejection('missing');
  return dashboardPrincipal(cookie, config, logins);
}
