/**
 * The dashboard's sign-in through a real OpenID Connect provider (issue 30): `oidc-provider` in this
 * process, real Chromium through its sign-in pages, the built daemon. An operator and a member side
 * by side (the member sees only what is theirs), a refused identity, a tampered ID token and state,
 * a replayed callback, and a sign-out that closes the login's WebSockets. One daemon for the file.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unhandedPort } from '../shared/ports.js';
import type { AuditRow } from '../../src/protocol/results.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { HAVE_CHROMIUM, logIn, useChromium } from './browser.js';
import { requireBuild } from './cli.js';
import { startDaemon, useSharedDaemon, type RunningDaemon } from './gateway-harness.js';
import {
  OIDC_SECRET,
  OIDC_SECRET_ENV,
  oidcConfig,
  signInAtProvider,
  startIdentityProvider,
  type IdentityProvider,
} from './oidc-fixture.js';
import { createAttached, dashboardConfig, tempDir } from './seed-fixture.js';

beforeAll(requireBuild);
const chromium = useChromium();

const ACCOUNTS = {
  olga: { email: 'olga@example.com', email_verified: true, name: 'Olga Operator' },
  mia: { email: 'mia@example.com', email_verified: true, name: 'Mia Member' },
  eve: { email: 'eve@elsewhere.test', email_verified: true, name: 'Eve Outsider' },
  // Claims an operator's address the provider never verified: the rules do not trust it.
  mallory: { email: 'olga@example.com', email_verified: false, name: 'Mallory' },
};

describe.skipIf(!HAVE_CHROMIUM)('dashboard sign-in through OpenID Connect', () => {
  let idp: IdentityProvider;
  let port: number;
  beforeAll(async () => {
    port = await unhandedPort();
    idp = await startIdentityProvider(ACCOUNTS, `http://127.0.0.1:${port}/auth/oidc/callback`);
  });
  afterAll(() => idp?.close());
  const daemon = useSharedDaemon(async () =>
    startDaemon({
      config: `${await dashboardConfig()}${oidcConfig(idp.issuer, port)}`,
      env: { [OIDC_SECRET_ENV]: OIDC_SECRET },
    }),
  );
  let native: GatewayClient | null = null;
  const owner = async (d: RunningDaemon): Promise<GatewayClient> => (native ??= await d.connect());
  afterAll(() => native?.close());

  /** Opens the dashboard in a fresh browser context and signs in at the provider as `account`. */
  async function signIn(d: RunningDaemon, account: string): Promise<Page> {
    const context = await chromium.browser.newContext();
    // The provider's development pages link a web font; there is no network here.
    await context.route(/fonts\.googleapis\.com/, (route) => route.abort());
    const page = await context.newPage();
    await page.goto(`${d.url}/`);
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
    await signInAtProvider(page, account);
    return page;
  }

  const sessionsListed = async (page: Page): Promise<string[]> => {
    await page.waitForSelector('#link-state[data-state="open"]');
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    const ids: string[] = [];
    for (const row of await page.locator('.session-row').all())
      ids.push((await row.getAttribute('data-session')) ?? '');
    return ids.sort();
  };

  /** Calls `method` on a WebSocket of the page's own login (a ticket minted from its cookie): the reason or 'ok'. */
  const callAs = (
    page: Page,
    method: string,
  ): Promise<{ reason: string; result: Record<string, unknown> | null }> =>
    page.evaluate(
      async ({ method, ws }) => {
        const r = await fetch('/api/auth/ws-ticket', { method: 'POST', credentials: 'same-origin' });
        const { ticket } = (await r.json()) as { ticket: string };
        const socket = new WebSocket(`${ws}/api/ws?ticket=${encodeURIComponent(ticket)}`);
        await new Promise((resolve, reject) => {
          socket.onopen = resolve;
          socket.onerror = reject;
        });
        type Reply = { error?: { data?: { reason?: string } }; result?: Record<string, unknown> };
        const answer = new Promise<Reply>(
          (resolve) => (socket.onmessage = (m) => resolve(JSON.parse(String(m.data)) as Reply)),
        );
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: {} }));
        const reply = await answer;
        socket.close();
        return { reason: reply.error?.data?.reason ?? 'ok', result: reply.result ?? null };
      },
      { method, ws: new URL(page.url()).origin.replace(/^http/, 'ws') },
    );

  const auditOf = async (d: RunningDaemon, actor: string): Promise<AuditRow[]> =>
    (await (await owner(d)).call<{ rows: AuditRow[] }>('audit.list', { actor, limit: 50 })).rows;

  it(
    'signs an operator and a member in side by side; the member sees only what is theirs',
    { timeout: 120_000 },
    async () => {
      const d = await daemon();
      const client = await owner(d);
      const shared = await createAttached(client, { cwd: tempDir() });
      const hidden = await createAttached(client, { cwd: tempDir() });
      const mia = `oidc:${idp.issuer}#mia`;
      await client.call('session.share', { session_id: shared, member: mia, level: 'read' });

      const operatorPage = await signIn(d, 'olga');
      const memberPage = await signIn(d, 'mia');
      await expect
        .poll(() => sessionsListed(operatorPage))
        .toEqual(expect.arrayContaining([shared, hidden].sort()));
      await expect.poll(() => sessionsListed(memberPage)).toEqual([shared]);

      // Who each page speaks for, from the daemon itself.
      const described = await memberPage.evaluate(async () => {
        const r = await fetch('/api/auth/ws-ticket', { method: 'POST', credentials: 'same-origin' });
        return r.status;
      });
      expect(described).toBe(200);

      // The header says who each page is; a member is offered no operator page.
      await expect
        .poll(() => operatorPage.locator('#who-name').textContent())
        .toBe('signed in as Olga Operator (operator)');
      await expect
        .poll(() => memberPage.locator('#who-name').textContent())
        .toBe('signed in as Mia Member (member)');
      for (const page of [operatorPage, memberPage])
        expect(await page.getByRole('button', { name: 'Log out' }).isVisible()).toBe(true);
      const operatorLinks = ['Sessions', 'New session', 'Status', 'Approvals', 'Jobs', 'Audit'];
      for (const name of operatorLinks)
        expect(await operatorPage.getByRole('link', { name, exact: true }).isVisible(), name).toBe(true);
      for (const name of operatorLinks)
        expect(await memberPage.getByRole('link', { name, exact: true }).isVisible(), name).toBe(
          !['Status', 'Approvals', 'Audit'].includes(name),
        );
      // Typed in by hand, an operator page is refused by the page and by the gateway alike.
      for (const hash of ['#/audit', '#/status', '#/approvals']) {
        await memberPage.goto(`${d.url}/${hash}`);
        await memberPage.locator('section[data-reason="operator_only"]').waitFor();
        expect(await memberPage.locator('.audit-row').count()).toBe(0);
      }
      await operatorPage.goto(`${d.url}/#/audit`);
      await operatorPage.locator('.audit-row').first().waitFor();
      for (const method of ['audit.list', 'approvals.list'])
        expect((await callAs(memberPage, method)).reason, method).toBe('permission_denied');
      expect((await callAs(operatorPage, 'audit.list')).reason).toBe('ok');
      // The gateway's own state is an operator's view; a member's describe leaves it out.
      const memberView = (await callAs(memberPage, 'runtime.describe')).result!;
      expect(Object.keys(memberView)).not.toEqual(expect.arrayContaining(['gateway']));
      expect(memberView).not.toHaveProperty('storage');
      expect(memberView).not.toHaveProperty('agent_cache');
      expect(memberView['principal']).toEqual({ subject: mia, provider: 'oidc', name: 'Mia Member' });
      const operatorView = (await callAs(operatorPage, 'runtime.describe')).result!;
      expect(operatorView).toHaveProperty('gateway');
      expect(operatorView).toHaveProperty('storage');

      const olgaRows = await auditOf(d, `oidc:${idp.issuer}#olga`);
      expect(olgaRows.map((r) => [r.path, r.action, r.outcome])).toContainEqual(['oidc', 'signed_in', 'ok']);
      const miaRows = await auditOf(d, mia);
      expect(miaRows.map((r) => [r.path, r.action, r.outcome])).toContainEqual(['oidc', 'signed_in', 'ok']);
      await Promise.all([operatorPage.context().close(), memberPage.context().close()]);
    },
  );

  it(
    'refuses an identity the rules do not name, and an e-mail the provider did not verify',
    { timeout: 120_000 },
    async () => {
      const d = await daemon();
      for (const account of ['eve', 'mallory']) {
        const page = await signIn(d, account);
        await page.locator('main[data-reason="oidc_refused"]').waitFor();
        expect(await page.locator('#reason').textContent()).toContain('not allowed');
        // No login was opened: the page has no cookie that mints a ticket.
        const status = await page.evaluate(
          async () =>
            (await fetch('/api/auth/ws-ticket', { method: 'POST', credentials: 'same-origin' })).status,
        );
        expect(status).toBe(401);
        const rows = await auditOf(d, `oidc:${idp.issuer}#${account}`);
        expect(rows.map((r) => [r.path, r.action, r.outcome])).toEqual([
          ['oidc', 'signed_in', 'oidc_refused'],
        ]);
        await page.context().close();
      }
    },
  );

  it(
    'refuses an expired ID token, a tampered state and a replayed callback',
    { timeout: 120_000 },
    async () => {
      const d = await daemon();
      const before = (await auditOf(d, 'oidc:unknown')).length;

      // An ID token that expired an hour ago (its claims changed in transit).
      const now = Math.floor(Date.now() / 1000);
      idp.tamperIdTokens = (claims) => ({ ...claims, iat: now - 7200, exp: now - 3600 });
      try {
        const page = await signIn(d, 'olga');
        await page.locator('main[data-reason="oidc_invalid"]').waitFor();
        await page.context().close();
      } finally {
        idp.tamperIdTokens = null;
      }

      const context = await chromium.browser.newContext();
      await context.route(/fonts\.googleapis\.com/, (route) => route.abort());
      // The provider's answer is held back from the daemon, then presented with another state.
      const page = await context.newPage();
      await page.goto(`${d.url}/`);
      await page.getByRole('link', { name: 'Sign in with your identity provider' }).click();
      idp.holdCallbacks = true;
      let callback: string;
      try {
        await signInAtProvider(page, 'olga');
        callback = (await page.locator('#held').getAttribute('href')) ?? '';
      } finally {
        idp.holdCallbacks = false;
      }
      const tampered = new URL(callback);
      tampered.searchParams.set('state', 'a-state-this-browser-never-started');
      await page.goto(tampered.href);
      await page.locator('main[data-reason="oidc_invalid"]').waitFor();
      // The untouched answer, presented after: its flow was used up by the tampered one.
      await page.goto(callback);
      await page.locator('main[data-reason="oidc_state"]').waitFor();
      const status = await page.evaluate(
        async () =>
          (await fetch('/api/auth/ws-ticket', { method: 'POST', credentials: 'same-origin' })).status,
      );
      expect(status).toBe(401);
      await context.close();

      const rows = (await auditOf(d, 'oidc:unknown')).slice(0, -before || undefined);
      expect(rows.map((r) => r.outcome).sort()).toEqual(['oidc_invalid', 'oidc_invalid', 'oidc_state']);
    },
  );

  it('signing out ends the login and closes its WebSockets, in every tab', { timeout: 120_000 }, async () => {
    const d = await daemon();
    const page = await signIn(d, 'olga');
    await sessionsListed(page);
    const closed = new Promise<void>((resolve) =>
      page.on('websocket', (ws) => ws.on('close', () => resolve())),
    );
    // The page may already hold its socket: reload so the listener sees it open.
    await page.reload();
    await sessionsListed(page);
    // Another tab of the same browser signs out; the first tab's socket is closed by the daemon.
    const other = await page.context().newPage();
    await other.goto(`${d.url}/`);
    await sessionsListed(other);
    const status = await other.evaluate(
      async () => (await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin' })).status,
    );
    expect(status).toBe(200);
    await closed;
    await page.getByRole('link', { name: 'Sign in with your identity provider' }).waitFor();
    const rows = await auditOf(d, `oidc:${idp.issuer}#olga`);
    expect(rows.map((r) => [r.path, r.action, r.outcome])).toContainEqual(['oidc', 'signed_out', 'ok']);
    await page.context().close();
  });

  it('keeps the password login beside it', { timeout: 30_000 }, async () => {
    const d = await daemon();
    const context = await chromium.browser.newContext();
    const page = await context.newPage();
    await page.goto(`${d.url}/`);
    await logIn(page);
    await sessionsListed(page);
    expect(await page.locator('#who-name').textContent()).toBe('signed in as owner (operator)');
    await context.close();
  });
});
