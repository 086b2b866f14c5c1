/**
 * The web dashboard in real Chromium (issue 13, SPEC UX-2) against the real daemon as a child
 * process in a temp home, its model the demo model of the test process. Each case drives the page
 * the way a person does and checks what the daemon and the model saw.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  HAVE_CHROMIUM,
  loggedIn,
  logIn,
  openDashboard,
  screenshotPath,
  sendMessage as send,
  useChromium,
} from './browser.js';
import { dashboardConfig, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

async function newGuiSession(page: Page, cwd: string, title: string): Promise<string> {
  await page.getByRole('link', { name: 'New session' }).click();
  await page.getByLabel('Title').fill(title);
  await page.getByLabel('Working directory').fill(cwd);
  await page.getByRole('button', { name: 'Create' }).click();
  await page.waitForURL(/#\/s\//);
  await page.getByRole('heading', { name: title }).waitFor();
  return decodeURIComponent(page.url().split('#/s/')[1]!);
}

describe.skipIf(!HAVE_CHROMIUM)('the dashboard in Chromium', () => {
  it('serves the page with a strict CSP, and 404s unknown paths and non-GET methods', async () => {
    const d = await fx.daemon({ extraConfig: await dashboardConfig() });
    const page = await fetch(`${d.url}/`, { headers: { 'accept-encoding': 'gzip' } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    expect(html).not.toMatch(/<script>|<style>|\son\w+=/);
    const asset = await fetch(`${d.url}${script}`);
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${d.url}/nope.html`)).status).toBe(404);
    expect((await fetch(`${d.url}/`, { method: 'PUT' })).status).toBe(404);
  });

  it('says to run gatehouse passwd when no password is set', async () => {
    const d = await fx.daemon();
    const { context, page } = await openDashboard(chromium.browser, d.url);
    await page.getByText('gatehouse passwd').waitFor();
    await context.close();
  });

  it('login: a wrong password is refused, the right one accepted; logout ends the cookie session', async () => {
    const d = await fx.daemon({ extraConfig: await dashboardConfig() });
    const { context, page } = await openDashboard(chromium.browser, d.url);
    await logIn(page, 'not the password');
    await page.getByText('Wrong password.').waitFor();
    await logIn(page);
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    await page.screenshot({ path: screenshotPath('dashboard-sessions.png') });
    const cookies = await context.cookies();
    expect(cookies.find((c) => c.name === 'gatehouse_session')).toMatchObject({
      httpOnly: true,
      sameSite: 'Strict',
    });
    // No secret where the page's scripts (or a URL) could hand it on: nothing stored, the cookie
    // unreadable to the page, the address without a token.
    const held = await page.evaluate(() => {
      const g = globalThis as unknown as {
        localStorage: { length: number };
        sessionStorage: { length: number };
        document: { cookie: string };
      };
      return { local: g.localStorage.length, session: g.sessionStorage.length, cookie: g.document.cookie };
    });
    expect(held).toEqual({ local: 0, session: 0, cookie: '' });
    expect(page.url()).toBe(`${d.url}/`);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    // The old cookie no longer mints a ticket.
    const cookie = cookies.find((c) => c.name === 'gatehouse_session')!;
    const minted = await fetch(`${d.url}/api/auth/ws-ticket`, {
      method: 'POST',
      headers: { origin: d.url, cookie: `${cookie.name}=${cookie.value}` },
    });
    expect(minted.status).toBe(401);
    await page.reload();
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await page.screenshot({ path: screenshotPath('dashboard-login.png') });
    await context.close();
  });

  it(
    'creates a gui session, streams a reply, keeps the history over a reload, and renders model HTML inert',
    { timeout: 90_000 },
    async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const { context, page } = await loggedIn(chromium.browser, d.url);
      const id = await newGuiSession(page, tempDir(), 'first page session');
      const native = await d.connect();
      expect(await native.call('session.info', { session_id: id })).toMatchObject({ source: 'gui' });

      await send(page, 'hello **world**');
      await page.locator('.msg-assistant strong', { hasText: 'world' }).waitFor();
      const xss = '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script>';
      await send(page, xss);
      await page.locator('.msg-assistant', { hasText: '<script>' }).waitFor();
      expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
      expect(await page.locator('.transcript img, .transcript script').count()).toBe(0);

      await page.reload();
      await page.locator('.msg-user', { hasText: 'hello **world**' }).waitFor();
      expect(await page.locator('.msg-user').count()).toBe(2);
      expect(await page.locator('.msg-assistant').count()).toBe(2);
      await context.close();
    },
  );
});
