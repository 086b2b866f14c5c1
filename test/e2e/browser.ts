/**
 * Real Chromium for the dashboard's end-to-end tests: Debian's /usr/bin/chromium driven by
 * playwright-core (which downloads no browser). CI installs the package (.ci/run); a machine
 * without it skips these tests with a loud message instead of failing on a missing binary.
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { CHROMIUM, HAVE_CHROMIUM, launchChromium } from '../fixtures/chromium.js';
import type { RunningDaemon } from './gateway-harness.js';
import { dashboardSession, PASSWORD, type Fixture } from './seed-fixture.js';

export { HAVE_CHROMIUM };

if (!HAVE_CHROMIUM) {
  process.stderr.write(
    `\n!!! ${CHROMIUM} is missing: the dashboard's browser tests are SKIPPED.\n` +
      '!!! Install it with: DEBIAN_FRONTEND=noninteractive apt-get install -y chromium (CI does).\n\n',
  );
}

export const launchBrowser = launchChromium;

/**
 * One Chromium for the calling test file, launched before its tests and closed after them (not
 * launched where it is missing: those files skip their browser cases).
 */
export function useChromium(): { readonly browser: Browser } {
  let browser: Browser | undefined;
  beforeAll(async () => {
    if (HAVE_CHROMIUM) browser = await launchBrowser();
  });
  afterAll(() => browser?.close());
  return {
    get browser(): Browser {
      if (!browser) throw new Error(`no browser: ${CHROMIUM} is missing`);
      return browser;
    },
  };
}

/**
 * Where a test's screenshot goes: a temp folder, so a test run leaves the work tree as it was;
 * `GATEHOUSE_SCREENSHOTS=docs/images` refreshes the pictures the docs show.
 */
export function screenshotPath(name: string): string {
  const dir = process.env['GATEHOUSE_SCREENSHOTS'] ?? join(tmpdir(), 'gatehouse-screenshots');
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}

/** A phone's screen (390x844 CSS pixels), touch, for the narrow layout. */
export const PHONE: BrowserContextOptions = {
  viewport: { width: 390, height: 844 },
  deviceScaleFactor: 2,
  isMobile: true,
  hasTouch: true,
};

/** A fresh, isolated browser context (its own cookies) with a page open at the dashboard. */
export async function openDashboard(
  browser: Browser,
  url: string,
  options: BrowserContextOptions = { viewport: { width: 1100, height: 800 } },
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  page.on('pageerror', (error) => {
    throw error;
  });
  await page.goto(`${url}/`);
  return { context, page };
}

export async function logIn(page: Page, password = PASSWORD): Promise<void> {
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}

/** Logs in and waits for the session list. */
export async function loggedIn(browser: Browser, url: string, options?: BrowserContextOptions) {
  const opened = await openDashboard(browser, url, options);
  await logIn(opened.page);
  await opened.page.waitForSelector('#link-state[data-state="open"]');
  await opened.page.getByRole('heading', { name: 'Sessions' }).waitFor();
  return opened;
}

/** Opens a session's page by its id and waits for its header. */
export async function openSession(page: Page, sessionId: string): Promise<void> {
  await page.goto(`${new URL(page.url()).origin}/#/s/${encodeURIComponent(sessionId)}`);
  await page.waitForSelector('#link-state[data-state="open"]');
  await page.locator('.session-head h1').waitFor();
}

/** dashboardSession() with a logged-in page open at the session. */
export async function sessionInPage(
  fx: Fixture,
  browser: Browser,
  params: Record<string, unknown>,
  extraConfig?: string,
): Promise<{
  d: RunningDaemon;
  native: GatewayClient;
  sessionId: string;
  context: BrowserContext;
  page: Page;
}> {
  const { d, native, sessionId } = await dashboardSession(fx, params, extraConfig);
  const { context, page } = await loggedIn(browser, d.url);
  await openSession(page, sessionId);
  return { d, native, sessionId, context, page };
}

/** Types a message into the composer and sends it with Enter. */
export async function sendMessage(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByLabel('Message').press('Enter');
}
