import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../../src/domain/auth/password.js';
import { connect, httpPost, rejectedUpgrade, startHarness, type Harness } from './harness.js';

const FAST = { N: 1 << 10, r: 8, p: 1 };
let passwordHash: string;
let harness: Harness | undefined;

beforeAll(async () => {
  passwordHash = await hashPassword('owner passphrase', FAST);
});
afterEach(async () => {
  await harness?.server.close();
  harness = undefined;
});

async function loggedIn(): Promise<{ cookie: string; origin: string }> {
  harness = await startHarness({ dashboard: { passwordHash } });
  const origin = harness.server.url;
  const reply = await httpPost(origin, '/auth/login', { password: 'owner passphrase' }, { origin });
  expect(reply.status).toBe(200);
  const setCookie = (reply.headers['set-cookie'] as string[])[0]!;
  return { cookie: setCookie.split(';')[0]!, origin };
}

describe('AUTH-3 dashboard login', () => {
  it('refuses a wrong password with 401 bad_password and sets no cookie', async () => {
    harness = await startHarness({ dashboard: { passwordHash } });
    const reply = await httpPost(harness.server.url, '/auth/login', { password: 'guess' });
    expect(reply).toMatchObject({ status: 401, body: { error: { reason: 'bad_password' } } });
    expect(reply.headers['set-cookie']).toBeUndefined();
  });

  it('sets an HttpOnly, SameSite=Strict cookie for the right password, kept only hashed', async () => {
    harness = await startHarness({ dashboard: { passwordHash } });
    const reply = await httpPost(harness.server.url, '/auth/login', { password: 'owner passphrase' });
    const setCookie = (reply.headers['set-cookie'] as string[])[0]!;
    expect(setCookie).toMatch(/^gatehouse_session=[A-Za-z0-9_-]{43};/);
    expect(setCookie).toContain('HttpOnly');
    expect(setCookie).toContain('SameSite=Strict');
    expect(setCookie).toContain('Path=/');
    const token = setCookie.split(';')[0]!.split('=')[1]!;
    expect(harness.server.logins.hashes()).toHaveLength(1);
    expect(harness.server.logins.hashes()).not.toContain(token);
  });

  it('refuses login when no password is configured, and malformed bodies', async () => {
    harness = await startHarness({ dashboard: { passwordHash: null } });
    const disabled = await httpPost(harness.server.url, '/auth/login', { password: 'x' });
    expect(disabled).toMatchObject({ status: 403, body: { error: { reason: 'dashboard_disabled' } } });
    await harness.server.close();
    harness = await startHarness({ dashboard: { passwordHash } });
    const extraKey = await httpPost(harness.server.url, '/auth/login', { password: 'x', admin: true });
    expect(extraKey).toMatchObject({ status: 400, body: { error: { reason: 'bad_request' } } });
  });

  it('throttles repeated failures', async () => {
    harness = await startHarness({ dashboard: { passwordHash } });
    const replies = [];
    for (let i = 0; i < 6; i++)
      replies.push(await httpPost(harness.server.url, '/auth/login', { password: `no${i}` }));
    expect(replies.map((reply) => reply.status)).toEqual([401, 401, 401, 401, 401, 429]);
    expect(replies[5]!.headers['retry-after']).toBe('1');
  });

  it('the cookie opens a WebSocket as an operator', async () => {
    const { cookie, origin } = await loggedIn();
    const client = await connect(harness!.wsUrl, ['gatehouse.v1'], { headers: { cookie }, origin });
    const described = (await client.call('runtime.describe', {})).result as {
      principal: { provider: string };
      capabilities: string[];
    };
    expect(described.principal.provider).toBe('dashboard');
    expect(described.capabilities).toContain('session:operator');
    client.close();
  });

  it('AUTH-6 a cookie upgrade from a foreign Origin is refused', async () => {
    const { cookie } = await loggedIn();
    const refused = await rejectedUpgrade(harness!.wsUrl, [], {
      headers: { cookie },
      origin: 'http://evil.example',
    });
    expect(refused).toMatchObject({ status: 403, body: { error: { reason: 'origin_denied' } } });
  });

  it('an unknown cookie is forged', async () => {
    harness = await startHarness({ dashboard: { passwordHash } });
    const refused = await rejectedUpgrade(harness.wsUrl, [], {
      headers: { cookie: 'gatehouse_session=nope' },
    });
    expect(refused.body.error.reason).toBe('forged');
  });

  it('mints a ws-ticket from the cookie that works exactly once', async () => {
    const { cookie, origin } = await loggedIn();
    const minted = await httpPost(origin, '/api/auth/ws-ticket', undefined, { cookie, origin });
    expect(minted.status).toBe(200);
    const ticket = minted.body.ticket as string;
    expect(typeof minted.body.expires_at).toBe('string');
    const client = await connect(`${harness!.wsUrl}?ticket=${ticket}`, [], { origin });
    expect((await client.call('ping', {})).result).toEqual({ pong: true });
    client.close();
    expect(
      (await rejectedUpgrade(`${harness!.wsUrl}?ticket=${ticket}`, [], { origin })).body.error.reason,
    ).toBe('replayed');
  });

  it('the HTTP mutation gate needs the cookie and an allowed Origin', async () => {
    const { cookie, origin } = await loggedIn();
    const noCookie = await httpPost(origin, '/api/auth/ws-ticket', undefined, { origin });
    expect(noCookie).toMatchObject({ status: 401, body: { error: { reason: 'missing' } } });
    const badOrigin = await httpPost(origin, '/api/auth/ws-ticket', undefined, {
      cookie,
      origin: 'http://evil.example',
    });
    expect(badOrigin).toMatchObject({ status: 403, body: { error: { reason: 'origin_denied' } } });
    const noOrigin = await httpPost(origin, '/api/auth/ws-ticket', undefined, { cookie });
    expect(noOrigin).toMatchObject({ status: 403, body: { error: { reason: 'origin_denied' } } });
  });

  it('logout ends the login', async () => {
    const { cookie, origin } = await loggedIn();
    expect((await httpPost(origin, '/auth/logout', undefined, { cookie, origin })).status).toBe(200);
    const after = await httpPost(origin, '/api/auth/ws-ticket', undefined, { cookie, origin });
    expect(after).toMatchObject({ status: 401, body: { error: { reason: 'forged' } } });
  });
});
