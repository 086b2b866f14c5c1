/**
 * The dashboard's sign-in through an OpenID Connect provider (issue 30, docs/identity.md):
 * authorization code flow with PKCE (`openid-client`).
 *
 * `GET /auth/oidc/start` opens a pending flow — state, nonce and PKCE verifier, kept here and
 * named by a random id in an HttpOnly SameSite=Lax cookie scoped to /auth/oidc (Lax: the provider
 * sends the browser back with a top-level navigation from its own site) — and redirects to the
 * provider. `GET /auth/oidc/callback` takes that flow once (a replay finds nothing), lets
 * `openid-client` verify the answer (state, PKCE, the ID token's signature, issuer, audience,
 * expiry and nonce), decides the role (domain/auth/oidc-roles.ts) and opens a dashboard login
 * exactly as the password does: the same HttpOnly SameSite=Strict cookie, the same ws-ticket and
 * Origin checks on every mutation after it. Every outcome leaves an audit row.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as client from 'openid-client';
import { identityFor, type Claims, type RoleRules } from '../../domain/auth/oidc-roles.js';
import { HttpRejection, type HttpRejectionReason } from '../../protocol/errors.js';
import { checkTransport, type RequestFacts } from './gate.js';
import { sessionCookie, signIn, type RouteDeps } from './http-routes.js';

export const OIDC_FLOW_COOKIE = 'gatehouse_oidc';
/** How long a browser may spend at the provider between start and callback. */
export const OIDC_FLOW_TTL_MS = 10 * 60 * 1000;
/** Pending flows at once; past it the oldest is forgotten (its callback then answers oidc_state). */
const MAX_PENDING = 256;

export interface OidcOptions {
  readonly issuer: string;
  readonly clientId: string;
  /** Null: a public client, authenticated by PKCE alone. */
  readonly clientSecret: string | null;
  readonly redirectUrl: string;
  readonly scopes: readonly string[];
  readonly rules: RoleRules;
  readonly now?: () => number;
}

interface PendingFlow {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly expiresAt: number;
}

/** Called by routeHttp with the session-opening half it shares with the password login. */
export interface OidcSignIn {
  start(res: ServerResponse, facts: RequestFacts, deps: RouteDeps): Promise<void>;
  callback(req: IncomingMessage, res: ServerResponse, facts: RequestFacts, deps: RouteDeps): Promise<void>;
}

function isLoopbackUrl(url: URL): boolean {
  return (
    url.hostname === 'localhost' || url.hostname === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(url.hostname)
  );
}

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A browser navigation is answered with a page, not JSON: what happened and the way back. */
function page(res: ServerResponse, rejection: HttpRejection, headers: Record<string, string> = {}): void {
  const text =
    '<!doctype html><meta charset="utf-8"><title>Gatehouse sign-in</title>' +
    `<main data-reason="${rejection.reason}"><h1>Sign-in failed</h1>` +
    `<p id="reason">${escapeHtml(rejection.message)}</p><p><a href="/">Back to the dashboard</a></p></main>`;
  res.writeHead(rejection.status, {
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function createOidcSignIn(options: OidcOptions): OidcSignIn {
  const now = options.now ?? Date.now;
  const issuer = new URL(options.issuer);
  const redirect = new URL(options.redirectUrl);
  const secure = redirect.protocol === 'https:' ? '; Secure' : '';
  const pending = new Map<string, PendingFlow>();
  let discovered: Promise<client.Configuration> | null = null;

  // Read once, at the first sign-in, so a provider that is down does not hold up the daemon; a
  // failed discovery is tried again by the next sign-in.
  const configuration = (): Promise<client.Configuration> => {
    discovered ??= client
      .discovery(
        issuer,
        options.clientId,
        options.clientSecret ?? undefined,
        options.clientSecret === null ? client.None() : undefined,
        // Plain http is accepted by the config for a loopback issuer only (config-oidc.ts).
        isLoopbackUrl(issuer) && issuer.protocol === 'http:'
          ? { execute: [client.allowInsecureRequests] }
          : {},
      )
      .catch((error: unknown) => {
        discovered = null;
        throw error;
      });
    return discovered;
  };

  const flowCookie = (value: string, maxAge: number): string =>
    `${OIDC_FLOW_COOKIE}=${value}; HttpOnly; SameSite=Lax; Path=/auth/oidc; Max-Age=${maxAge}${secure}`;

  const sweep = (): void => {
    const at = now();
    for (const [id, flow] of pending) if (at >= flow.expiresAt) pending.delete(id);
    while (pending.size >= MAX_PENDING) {
      const oldest = pending.keys().next();
      if (oldest.done) break;
      pending.delete(oldest.value);
    }
  };

  const failed = async (
    res: ServerResponse,
    deps: RouteDeps,
    reason: HttpRejectionReason,
    subject = 'oidc:unknown',
  ): Promise<void> => {
    await signIn(deps, { subject, path: 'oidc', action: 'signed_in', outcome: reason });
    page(res, new HttpRejection(reason), { 'set-cookie': flowCookie('', 0) });
  };

  return {
    async start(res, facts, deps) {
      const rejected = checkTransport(facts, deps.config);
      if (rejected) return page(res, rejected);
      let config: client.Configuration;
      try {
        config = await configuration();
      } catch (error) {
        deps.logger.warn(
          { err: error, issuer: options.issuer },
          'the identity provider could not be reached',
        );
        return page(res, new HttpRejection('oidc_unreachable'));
      }
      sweep();
      const flow: PendingFlow = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        verifier: client.randomPKCECodeVerifier(),
        expiresAt: now() + OIDC_FLOW_TTL_MS,
      };
      const id = client.randomState();
      pending.set(id, flow);
      const target = client.buildAuthorizationUrl(config, {
        redirect_uri: options.redirectUrl,
        scope: options.scopes.join(' '),
        code_challenge: await client.calculatePKCECodeChallenge(flow.verifier),
        code_challenge_method: 'S256',
        state: flow.state,
        nonce: flow.nonce,
      });
      res.writeHead(303, {
        location: target.href,
        'cache-control': 'no-store',
        'set-cookie': flowCookie(id, Math.floor(OIDC_FLOW_TTL_MS / 1000)),
      });
      res.end();
    },

    async callback(req, res, facts, deps) {
      const rejected = checkTransport(facts, deps.config);
      if (rejected) return page(res, rejected);
      const id = facts.cookies.get(OIDC_FLOW_COOKIE);
      const flow = id === undefined ? undefined : pending.get(id);
      if (id !== undefined) pending.delete(id);
      if (flow === undefined || now() >= flow.expiresAt) return failed(res, deps, 'oidc_state');
      let claims: Claims;
      try {
        const config = await configuration();
        const current = new URL(options.redirectUrl);
        current.search = new URL(req.url ?? '/', 'http://localhost').search;
        const tokens = await client.authorizationCodeGrant(config, current, {
          pkceCodeVerifier: flow.verifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        });
        const idClaims = tokens.claims();
        if (idClaims === undefined) throw new Error('no ID token');
        claims = idClaims;
        // Many providers put e-mail and groups in the userinfo answer only; the ID token's `sub`
        // is checked against it and its claims win.
        if (config.serverMetadata().userinfo_endpoint !== undefined)
          claims = {
            ...(await client.fetchUserInfo(config, tokens.access_token, idClaims.sub)),
            ...idClaims,
          };
      } catch (error) {
        deps.logger.warn(
          { err: error instanceof Error ? error.message : String(error) },
          'OpenID Connect sign-in refused: the answer did not verify',
        );
        return failed(res, deps, 'oidc_invalid');
      }
      const decided = identityFor(options.issuer, claims, options.rules);
      if (!decided.ok) {
        deps.logger.warn({ subject: decided.subject }, 'OpenID Connect sign-in refused by the role rules');
        return failed(res, deps, 'oidc_refused', decided.subject);
      }
      await signIn(deps, {
        subject: decided.identity.subject,
        path: 'oidc',
        action: 'signed_in',
        outcome: 'ok',
      });
      const token = deps.logins.open(decided.identity);
      res.writeHead(303, {
        location: '/',
        'cache-control': 'no-store',
        'set-cookie': [flowCookie('', 0), sessionCookie(token, Math.floor(deps.logins.ttlMs / 1000))],
      });
      res.end();
    },
  };
}
