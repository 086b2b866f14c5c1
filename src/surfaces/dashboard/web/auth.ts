/**
 * The dashboard's HTTP auth routes (docs/protocol.md): password login sets an HttpOnly cookie the
 * page never sees; a ws-ticket minted from that cookie opens one WebSocket. No secret is kept in
 * the page, in local storage or in a URL other than the single-use ticket of the upgrade.
 */

export class SignedOut extends Error {
  constructor(readonly reason: string) {
    super(`signed out (${reason})`);
  }
}

async function post(
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(path, {
    method: 'POST',
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });
  let parsed: Record<string, unknown> = {};
  try {
    parsed = (await response.json()) as Record<string, unknown>;
  } catch {
    // A non-JSON answer (a proxy's error page): the status says enough.
  }
  return { status: response.status, body: parsed };
}

function reasonOf(body: Record<string, unknown>): string {
  const error = body['error'] as { reason?: string } | undefined;
  return error?.reason ?? 'unknown';
}

/** How one may sign in (GET /healthz): the owner's password, an identity provider, both or none. */
export async function signInMethods(): Promise<{ password: boolean; oidc: boolean }> {
  const response = await fetch('/healthz', { credentials: 'same-origin' });
  const body = (await response.json()) as { dashboard_login?: boolean; dashboard_oidc?: boolean };
  return { password: body.dashboard_login !== false, oidc: body.dashboard_oidc === true };
}

/** Where the identity provider's sign-in starts: a full-page navigation, back to `/` when done. */
export const OIDC_START = '/auth/oidc/start';

export type LoginResult = 'ok' | 'bad_password' | 'rate_limited' | 'dashboard_disabled' | 'failed';

export async function login(password: string): Promise<LoginResult> {
  const { status, body } = await post('/auth/login', { password });
  if (status === 200) return 'ok';
  const reason = reasonOf(body);
  return reason === 'bad_password' || reason === 'rate_limited' || reason === 'dashboard_disabled'
    ? reason
    : 'failed';
}

export async function logout(): Promise<void> {
  await post('/auth/logout');
}

/** A fresh single-use ticket for /api/ws, or SignedOut when the cookie is missing or expired. */
export async function wsTicket(): Promise<string> {
  const { status, body } = await post('/api/auth/ws-ticket');
  if (status === 200 && typeof body['ticket'] === 'string') return body['ticket'];
  if (status === 401) throw new SignedOut(reasonOf(body));
  throw new Error(`ticket refused: ${reasonOf(body)}`);
}
