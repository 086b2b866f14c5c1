/**
 * The dashboard's HTTP routes (AUTH-3): password login setting an HttpOnly SameSite=Strict cookie,
 * logout, and minting a single-use WebSocket ticket from the cookie. Everything else falls to the
 * static-files hook (the dashboard's own assets, served later) or 404.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { z } from 'zod';
import type { LoginLimiter, LoginOutcome } from '../../domain/auth/login-limiter.js';
import type { DashboardLogins } from '../../domain/auth/logins.js';
import { isMember } from '../../domain/auth/principal.js';
import { verifyPassword } from '../../domain/auth/password.js';
import { TicketCapacityError, type TicketBook } from '../../domain/auth/tickets.js';
import { HttpRejection } from '../../protocol/errors.js';
import type { Logger } from '../../protocol/logger.js';
import {
  authenticateMutation,
  checkOrigin,
  checkTransport,
  DASHBOARD_SUBJECT,
  SESSION_COOKIE,
  type GateConfig,
  type RequestFacts,
} from './gate.js';
import type { OidcSignIn } from './oidc-routes.js';
import { metricsRefusal, serveMetrics, type MetricsRoute } from './metrics-route.js';

/** A dashboard sign-in or sign-out, accepted (`ok`) or refused (its reason), for the audit trail. */
export type SignInListener = (event: {
  subject: string;
  path: string;
  action: 'signed_in' | 'signed_out';
  outcome: string;
}) => Promise<void>;

/** Serves a request the RPC surface does not own; returns false when it did not handle it. */
export type StaticHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/** The OpenAI-compatible endpoint (surfaces/openai): serves `/v1/` paths, false for any other. */
export interface OpenAiRoute {
  handle(req: IncomingMessage, res: ServerResponse, path: string): boolean;
}

export interface RouteDeps {
  readonly config: GateConfig;
  readonly tickets: TicketBook;
  readonly logins: DashboardLogins;
  readonly limiter: LoginLimiter;
  /** The owner's scrypt hash, or null when the dashboard login is disabled. */
  /** Replaced when `gatehouse passwd` reloads it (RpcServer.setPassword). */
  passwordHash: string | null;
  readonly staticFiles: StaticHandler | undefined;
  /** Extra fields of GET /healthz (the daemon's lifecycle state). */
  readonly health?: (() => Record<string, unknown>) | undefined;
  /** GET /metrics, when `metrics.enabled` (metrics-route.ts); absent: 404 like any unknown path. */
  readonly metrics?: MetricsRoute | null | undefined;
  /** `/v1/…`, when `api_server` is configured; absent: 404 like any unknown path. */
  readonly openai?: OpenAiRoute | null | undefined;
  readonly onSignIn?: SignInListener | undefined;
  /** Sign-in through an OpenID Connect provider (`auth.oidc`); absent: its routes answer oidc_disabled. */
  readonly oidc?: OidcSignIn | null | undefined;
  /** Told the login id a sign-out ended, so the server closes that login's WebSockets. */
  readonly onSignOut?: ((login: string) => void) | undefined;
  readonly logger: Logger;
}

/** Tells the listener; a failure to record is logged, never turned into a refused sign-in. */
export async function signIn(deps: RouteDeps, event: Parameters<SignInListener>[0]): Promise<void> {
  try {
    await deps.onSignIn?.(event);
  } catch (error) {
    deps.logger.error({ err: error, action: event.action }, 'could not record the sign-in');
  }
}

const MAX_BODY_BYTES = 4096;
export const OIDC_START_PATH = '/auth/oidc/start';
export const OIDC_CALLBACK_PATH = '/auth/oidc/callback';
const LoginBody = z.strictObject({ password: z.string().min(1).max(1024) });

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

function reject(res: ServerResponse, rejection: HttpRejection): void {
  sendJson(res, rejection.status, rejection.body());
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpRejection('bad_request', 'request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The dashboard login's cookie, whichever way it was opened. */
export function sessionCookie(value: string, maxAgeSeconds: number): string {
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}`;
}

function rateLimited(res: ServerResponse, retryAfterMs: number): void {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  const rejection = new HttpRejection('rate_limited', `too many login attempts: retry in ${seconds} s`);
  sendJson(res, rejection.status, rejection.body(), { 'retry-after': String(seconds) });
}

async function login(
  req: IncomingMessage,
  res: ServerResponse,
  facts: RequestFacts,
  deps: RouteDeps,
): Promise<void> {
  const rejected = checkTransport(facts, deps.config) ?? checkOrigin(facts, deps.config, false);
  if (rejected) return reject(res, rejected);
  if (deps.passwordHash === null) return reject(res, new HttpRejection('dashboard_disabled'));
  // Counted here, before the first await: concurrent guesses cannot all pass one check.
  const client = facts.remoteAddress ?? 'unknown';
  const admission = deps.limiter.admit(client);
  if (!admission.admitted) return rateLimited(res, admission.retryAfterMs);
  let outcome: LoginOutcome = 'abandoned';
  try {
    outcome = await checkPassword(req, res, deps, deps.passwordHash);
  } finally {
    deps.limiter.settle(client, outcome);
  }
  if (outcome === 'refused')
    await signIn(deps, {
      subject: DASHBOARD_SUBJECT,
      path: 'password',
      action: 'signed_in',
      outcome: 'bad_password',
    });
  if (outcome !== 'accepted') return;
  await signIn(deps, { subject: DASHBOARD_SUBJECT, path: 'password', action: 'signed_in', outcome: 'ok' });
  const token = deps.logins.open();
  sendJson(
    res,
    200,
    { ok: true },
    { 'set-cookie': sessionCookie(token, Math.floor(deps.logins.ttlMs / 1000)) },
  );
}

/** Reads the body and verifies the password, answering every outcome but success. */
async function checkPassword(
  req: IncomingMessage,
  res: ServerResponse,
  deps: RouteDeps,
  passwordHash: string,
): Promise<LoginOutcome> {
  let body: z.infer<typeof LoginBody>;
  try {
    body = LoginBody.parse(JSON.parse(await readBody(req)));
  } catch (error) {
    reject(
      res,
      error instanceof HttpRejection
        ? error
        : new HttpRejection('bad_request', 'expected a JSON body {"password": "..."}'),
    );
    return 'abandoned';
  }
  if (!deps.limiter.beginVerification()) {
    rateLimited(res, deps.limiter.busyRetryMs);
    return 'abandoned';
  }
  let matches: boolean;
  try {
    matches = await verifyPassword(body.password, passwordHash);
  } finally {
    deps.limiter.endVerification();
  }
  if (matches) return 'accepted';
  deps.logger.warn({ route: '/auth/login', peer: req.socket.remoteAddress }, 'dashboard login refused');
  reject(res, new HttpRejection('bad_password'));
  return 'refused';
}

async function logout(res: ServerResponse, facts: RequestFacts, deps: RouteDeps): Promise<void> {
  const principal = authenticateMutation(facts, deps.config, deps.logins);
  if (principal instanceof HttpRejection) return reject(res, principal);
  const token = facts.cookies.get(SESSION_COOKIE);
  const ended = token === undefined ? null : deps.logins.end(token);
  // Its WebSockets close with it: a signed-out browser keeps no live view (issue 30).
  if (ended !== null) deps.onSignOut?.(ended);
  await signIn(deps, {
    subject: principal.subject,
    path: principal.provider === 'oidc' ? 'oidc' : 'password',
    action: 'signed_out',
    outcome: 'ok',
  });
  sendJson(res, 200, { ok: true }, { 'set-cookie': sessionCookie('', 0) });
}

function wsTicket(res: ServerResponse, facts: RequestFacts, deps: RouteDeps): void {
  const principal = authenticateMutation(facts, deps.config, deps.logins);
  if (principal instanceof HttpRejection) return reject(res, principal);
  try {
    // The ticket speaks for the login's identity: its subject, role, name and the login itself.
    const { ticket, expiresAt } = deps.tickets.mint('dashboard', {
      subject: principal.subject,
      profile: deps.config.profile,
      ...(isMember(principal) ? { role: 'member' as const } : {}),
      login: {
        id: principal.login ?? '',
        name: principal.name ?? principal.subject,
        path: principal.provider === 'oidc' ? 'oidc' : 'password',
      },
    });
    sendJson(res, 200, { ticket, expires_at: new Date(expiresAt).toISOString() });
  } catch (error) {
    if (error instanceof TicketCapacityError)
      return reject(
        res,
        new HttpRejection(error.scope === 'principal' ? 'principal_ticket_capacity' : 'ticket_capacity'),
      );
    throw error;
  }
}

/** Routes one HTTP request. Never rejects: failures become a JSON error body without internals. */
export async function routeHttp(
  req: IncomingMessage,
  res: ServerResponse,
  facts: RequestFacts,
  deps: RouteDeps,
): Promise<void> {
  const path = new URL(req.url ?? '/', 'http://localhost').pathname;
  try {
    if (req.method === 'POST' && path === '/auth/login') return await login(req, res, facts, deps);
    if (req.method === 'POST' && path === '/auth/logout') return await logout(res, facts, deps);
    if (req.method === 'POST' && path === '/api/auth/ws-ticket') return wsTicket(res, facts, deps);
    if (req.method === 'GET' && (path === OIDC_START_PATH || path === OIDC_CALLBACK_PATH)) {
      if (!deps.oidc) return reject(res, new HttpRejection('oidc_disabled'));
      return path === OIDC_START_PATH
        ? await deps.oidc.start(res, facts, deps)
        : await deps.oidc.callback(req, res, facts, deps);
    }
    const rejected = checkTransport(facts, deps.config);
    if (rejected) return reject(res, rejected);
    if (req.method === 'GET' && path === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, ...deps.health?.() }));
      return;
    }
    if (req.method === 'GET' && path === '/metrics' && deps.metrics) {
      const refused = metricsRefusal(req, facts, deps.metrics.key);
      return refused ? reject(res, refused) : await serveMetrics(res, deps.metrics);
    }
    if (deps.openai?.handle(req, res, path)) return;
    if (deps.staticFiles?.(req, res)) return;
    reject(res, new HttpRejection('not_found'));
  } catch (error) {
    deps.logger.error({ path, err: error }, 'http route failed');
    if (!res.headersSent) reject(res, new HttpRejection('internal_error'));
    else res.destroy();
  }
}
