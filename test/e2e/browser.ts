/**
 * Real Chromium for the dashboard's end-to-end tests: Debian's /usr/bin/chromium driven by
 * playwright-core (which downloads no browser). CI installs the package (.ci/run); a machine
 * without it skips these tests with a loud message instead of failing on a missing binary.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { PASSWORD } from './seed-fixture.js';

export const CHROMIUM = process.env['GATEHOUSE_CHROMIUM'] ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);

if (!HAVE_CHROMIUM) {
  process.stderr.write(
    `\n!!! ${CHROMIUM} is missing: the dashboard's browser tests are SKIPPED.\n` +
      '!!! Install it with: DEBIAN_FRONTEND=noninteractive apt-get install -y chromium (CI does).\n\n',
  );
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
    ],
    // No userDataDir: playwright gives every launch a fresh temporary profile of its own.
  });
}

/** A fresh, isolated browser context (its own cookies) with a page open at the dashboard. */
export async function openDashboard(
  browser: Browser,
  url: string,
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 800 } });
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
export async function loggedIn(browser: Browser, url: string) {
  const opened = await openDashboard(browser, url);
  await logIn(opened.page);
  await opened.page.waitForSelector('#link-state[data-state="open"]');
  await opened.page.getByRole('heading', { name: 'Sessions' }).waitFor();
  return opened;
}

/** A port that was free a moment ago, so a restarted daemon can listen where the page looks. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
