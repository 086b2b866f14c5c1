/**
 * A real OpenID Connect provider in the test process (`oidc-provider` v9, its development sign-in
 * pages) for the dashboard's OIDC sign-in tests: accounts by id with their claims, one confidential
 * client whose redirect URI is the daemon's callback, PKCE required. `tamperIdTokens` rewrites the
 * ID token's claims on the way from the token endpoint (an expired or altered token in transit).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import type { Page } from 'playwright-core';

export const OIDC_CLIENT_ID = 'gatehouse';
export const OIDC_SECRET = 'a-test-client-secret-of-forty-characters';
export const OIDC_SECRET_ENV = 'GATEHOUSE_TEST_OIDC_SECRET';

export type AccountClaims = Record<string, unknown>;

export interface IdentityProvider {
  readonly issuer: string;
  /** While set, every ID token the token endpoint answers has its claims changed by it. */
  tamperIdTokens: ((claims: AccountClaims) => AccountClaims) | null;
  /**
   * While true, the redirect back to the daemon is held: the browser gets a page whose `#held` link
   * is the callback URL, so a test can present it (or a changed copy) itself.
   */
  holdCallbacks: boolean;
  close(): Promise<void>;
}

/** Rewrites the ID token's claims in transit (its signature then no longer matches them). */
function tamper(body: string, change: (claims: AccountClaims) => AccountClaims): string {
  const parsed = JSON.parse(body) as { id_token?: string };
  if (typeof parsed.id_token !== 'string') return body;
  const [header, payload, signature] = parsed.id_token.split('.') as [string, string, string];
  const claims = change(JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as AccountClaims);
  parsed.id_token = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
  return JSON.stringify(parsed);
}

export async function startIdentityProvider(
  accounts: Record<string, AccountClaims>,
  redirectUri: string,
): Promise<IdentityProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | null = null;
  const state: { tamperIdTokens: ((claims: AccountClaims) => AccountClaims) | null } = {
    tamperIdTokens: null,
  };
  let hold = false;
  const server: Server = createServer((req, res) => {
    if (hold) {
      const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => typeof res;
      res.end = ((...args: unknown[]) => {
        const location = res.getHeader('location');
        if (typeof location !== 'string' || !location.startsWith(redirectUri)) return end(...args);
        const body = `<a id="held" href="${location.replace(/&/g, '&amp;')}">held</a>`;
        res.statusCode = 200;
        res.removeHeader('location');
        res.setHeader('content-type', 'text/html');
        res.setHeader('content-length', Buffer.byteLength(body));
        return end(body);
      }) as typeof res.end;
    }
    const change = state.tamperIdTokens;
    if (change !== null && req.method === 'POST' && req.url?.startsWith('/token')) {
      const end = res.end.bind(res) as (chunk?: unknown, ...rest: unknown[]) => typeof res;
      res.end = ((chunk?: unknown, ...rest: unknown[]) => {
        if (typeof chunk !== 'string' && !Buffer.isBuffer(chunk)) return end(chunk, ...rest);
        const body = tamper(chunk.toString(), change);
        if (!res.headersSent) res.setHeader('content-length', Buffer.byteLength(body));
        return end(body, ...rest);
      }) as typeof res.end;
    }
    handler?.(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: OIDC_CLIENT_ID,
        client_secret: OIDC_SECRET,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
      },
    ],
    claims: {
      openid: ['sub'],
      email: ['email', 'email_verified'],
      profile: ['name'],
      groups: ['groups'],
    },
    findAccount: (_ctx: unknown, id: string) => {
      const claims = accounts[id];
      return claims === undefined ? undefined : { accountId: id, claims: () => ({ sub: id, ...claims }) };
    },
    pkce: { required: () => true },
    cookies: { keys: ['a-cookie-key-for-the-test-provider'] },
    features: { devInteractions: { enabled: true } },
    ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: 600 },
  });
  handler = provider.callback();
  return {
    issuer,
    get holdCallbacks() {
      return hold;
    },
    set holdCallbacks(value: boolean) {
      hold = value;
    },
    get tamperIdTokens() {
      return state.tamperIdTokens;
    },
    set tamperIdTokens(value: ((claims: AccountClaims) => AccountClaims) | null) {
      state.tamperIdTokens = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The provider's development pages: sign in as `account` (any password), then consent. */
export async function signInAtProvider(page: Page, account: string): Promise<void> {
  await page.locator('input[name="login"]').fill(account);
  await page.locator('input[name="password"]').fill('any password');
  await page.getByRole('button', { name: 'Sign-in' }).click();
  await page.getByRole('button', { name: 'Continue' }).click();
}

/** The `auth.oidc` section for a daemon at `port` signing in through `issuer`. */
export function oidcConfig(issuer: string, port: number, extra = ''): string {
  return [
    'listener:',
    `  port: ${port}`,
    'auth:',
    '  oidc:',
    `    issuer: ${issuer}`,
    `    client_id: ${OIDC_CLIENT_ID}`,
    `    client_secret_env: ${OIDC_SECRET_ENV}`,
    `    redirect_url: http://127.0.0.1:${port}/auth/oidc/callback`,
    '    scopes: [openid, email, profile, groups]',
    '    operators:',
    '      emails: [olga@example.com]',
    '    members:',
    '      domains: [example.com]',
    '      groups: [contractors]',
    extra,
  ].join('\n');
}
