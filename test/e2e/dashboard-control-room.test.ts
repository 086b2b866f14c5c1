/**
 * Issue 31 items 2, 7 and 8 in real Chromium, one daemon and one browser for the file: a search hit
 * is named by its session's title and opens the session at the message (a page older than the
 * first one loaded); the page follows new activity unless the user scrolled up ("Jump to latest");
 * an approval that waits is brought into view, marks the tab title and raises a browser
 * notification (permission granted to the context); a running command's output streams into its
 * card; live messages carry their time; the dark theme follows prefers-color-scheme; a favicon.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import {
  HAVE_CHROMIUM,
  logIn,
  loggedIn,
  openSession,
  screenshotPath,
  sendMessage,
  useChromium,
} from './browser.js';
import { dashboardConfig, dashboardSession, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

/** Records every Notification the page constructs (the desktop cannot be observed from here). */
const NOTIFICATION_SPY = `(() => {
  const Real = window.Notification;
  window.__shown = [];
  class Spy extends Real {
    constructor(title, options) {
      super(title, options);
      window.__shown.push({ title, body: options && options.body });
    }
  }
  Object.defineProperty(Spy, 'permission', { get: () => Real.permission });
  Spy.requestPermission = (...args) => Real.requestPermission(...args);
  window.Notification = Spy;
})();`;

const shown = (page: Page) =>
  page.evaluate(() => (globalThis as unknown as { __shown: { title: string; body: string }[] }).__shown);

const atBottom = (page: Page) =>
  page.evaluate(() => {
    const w = globalThis as unknown as {
      innerHeight: number;
      scrollY: number;
      document: { documentElement: { scrollHeight: number } };
    };
    return w.innerHeight + w.scrollY >= w.document.documentElement.scrollHeight - 48;
  });

async function inViewport(page: Page, selector: string): Promise<boolean> {
  const box = await page.locator(selector).boundingBox();
  const size = page.viewportSize()!;
  return box !== null && box.y >= 0 && box.y + Math.min(box.height, 40) <= size.height;
}

describe.skipIf(!HAVE_CHROMIUM)('the dashboard as a control room, in Chromium', () => {
  it(
    'opens a search hit at its message, follows live work, announces a waiting approval, streams a tool',
    { timeout: 180_000 },
    async () => {
      const cwd = tempDir();
      const { d, native, sessionId } = await dashboardSession(fx, { title: 'Garden plans', cwd });
      // The hit is the first message of 51 turns: older than the 100 messages a session opens with.
      await runTurn(native, sessionId, 'seed-0', 'tomatoes in the greenhouse');
      for (let i = 1; i <= 50; i++) await runTurn(native, sessionId, `seed-${i}`, `filler ${i}`);

      const context = await chromium.browser.newContext({
        viewport: { width: 1100, height: 800 },
        permissions: ['notifications'],
      });
      await context.addInitScript(NOTIFICATION_SPY);
      const page = await context.newPage();
      page.on('pageerror', (error) => {
        throw error;
      });
      await page.goto(`${d.url}/`);
      await logIn(page);
      await page.getByRole('heading', { name: 'Sessions' }).waitFor();

      // Item 7: the hit names the session by its title and opens it at the message.
      await page.getByLabel('Search').fill('greenhouse');
      await page.getByRole('button', { name: 'Search' }).click();
      const hits = page.locator('.session-row.hit');
      await hits.first().waitFor();
      // The message and the demo model's echo of it, newest first.
      expect(await hits.getByRole('link').allTextContents()).toEqual(['Garden plans', 'Garden plans']);
      const hit = hits.nth(1);
      expect(await hit.locator('.meta').textContent()).toMatch(/^user · .*: tomatoes in the \[greenhouse\]$/);
      const messageId = await hit.getAttribute('data-message');
      await page.screenshot({ path: screenshotPath('dashboard-search.png') });
      await hit.getByRole('link').click();
      const target = page.locator(`.transcript article[data-message-id="${messageId}"]`);
      await page.locator('.transcript article.hit').waitFor();
      expect(await target.getAttribute('class')).toContain('hit');
      expect(await target.locator('.text').textContent()).toBe('tomatoes in the greenhouse');
      expect(await inViewport(page, '.transcript article.hit')).toBe(true);
      expect(await atBottom(page)).toBe(false);

      // Item 2: scrolled up, new activity does not move the page; "Jump to latest" does.
      const jump = page.getByRole('button', { name: 'Jump to latest' });
      expect(await jump.isVisible()).toBe(false);
      await runTurn(native, sessionId, 'news', 'news while reading');
      await page.locator('.msg-assistant', { hasText: 'news while reading' }).waitFor();
      await jump.waitFor();
      expect(await inViewport(page, '.transcript article.hit')).toBe(true);
      await jump.click();
      expect(await atBottom(page)).toBe(true);
      expect(await jump.isVisible()).toBe(false);
      // Item 8: a message that arrived live carries its time.
      const liveStamp = page
        .locator('.msg-assistant', { hasText: 'news while reading' })
        .locator('time.stamp');
      expect((await liveStamp.textContent())!.trim()).not.toBe('');

      // Following again: a waiting approval is brought into view, titled and notified.
      expect(await page.title()).toBe('Gatehouse');
      const command = 'echo first-line; while [ ! -e release ]; do sleep 0.1; done; echo last-line';
      await sendMessage(page, `run: ${command}`);
      await page.locator('.prompt.approval').waitFor();
      expect(await inViewport(page, '.prompt.approval')).toBe(true);
      expect(await page.title()).toBe('(1) Waiting for you · Garden plans · Gatehouse');
      await page.waitForFunction(
        () => (globalThis as unknown as { __shown: unknown[] }).__shown.length === 1,
      );
      expect(await shown(page)).toEqual([{ title: 'Gatehouse · Garden plans', body: `Approve? ${command}` }]);
      await page.getByRole('button', { name: 'Allow once' }).click();
      await page.locator('.prompt.approval').waitFor({ state: 'detached' });
      expect(await page.title()).toBe('Gatehouse');

      // The running command's output streams into its card, open while it runs.
      const card = page.locator('details.tool[data-outcome="running"]', { hasText: 'echo first-line' });
      await card.locator('.tool-output', { hasText: 'first-line' }).waitFor();
      expect(await card.evaluate((el) => (el as unknown as { open: boolean }).open)).toBe(true);
      expect(await card.locator('.tool-status').textContent()).toMatch(/^running · \d+\.\d s · \d+ bytes$/);
      await page.screenshot({ path: screenshotPath('dashboard-live-tool.png') });
      writeFileSync(join(cwd, 'release'), '');
      const done = page.locator('.transcript details.tool[data-outcome="done"]', {
        hasText: 'echo first-line',
      });
      await done.waitFor();
      expect(await done.locator('.tool-status').textContent()).toBe('done');
      expect(await done.locator('.tool-output').textContent()).toContain('last-line');
      await page.locator('.msg-assistant', { hasText: 'the tool terminal returned' }).waitFor();
      expect(await shown(page)).toHaveLength(1);
      await context.close();

      // Item 8: the dark theme follows the system setting; the page has a favicon.
      const dark = await chromium.browser.newContext({
        viewport: { width: 1100, height: 800 },
        colorScheme: 'dark',
      });
      const darkPage = await dark.newPage();
      await darkPage.goto(`${d.url}/`);
      await logIn(darkPage);
      await darkPage.goto(`${d.url}/#/s/${encodeURIComponent(sessionId)}`);
      await darkPage.locator('.msg-assistant', { hasText: 'the tool terminal returned' }).waitFor();
      const background = await darkPage.evaluate(
        () =>
          (
            globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string } }
          ).getComputedStyle(
            (globalThis as unknown as { document: { documentElement: unknown } }).document.documentElement,
          ).backgroundColor,
      );
      expect(background).toBe('rgb(21, 23, 27)');
      await darkPage.screenshot({ path: screenshotPath('dashboard-dark.png') });
      const icon = await darkPage.locator('link[rel="icon"]').getAttribute('href');
      const fetched = await darkPage.request.get(new URL(icon!, `${d.url}/`).href);
      expect(fetched.status()).toBe(200);
      expect(fetched.headers()['content-type']).toBe('image/svg+xml');
      expect((await fetched.text()).startsWith('<svg')).toBe(true);
      await dark.close();

      // Items 1 and 6: a turn crosses a SIGKILL while its command runs; the gateway comes back on
      // another address. The old tab says so; the new one reads the turn's timeline.
      const watch = await loggedIn(chromium.browser, d.url);
      await openSession(watch.page, sessionId);
      const crashing = 'echo before-crash; while [ ! -e release-crash ]; do sleep 0.1; done';
      await sendMessage(watch.page, `run: ${crashing}`);
      await watch.page.getByRole('button', { name: 'Allow once' }).click();
      await watch.page
        .locator('details.tool[data-outcome="running"] .tool-output', { hasText: 'before-crash' })
        .waitFor();
      await d.kill();
      fx.forget(d);
      try {
        await watch.page.waitForSelector('#link-state[data-lost="true"]');
        expect(await watch.page.locator('#link-state').textContent()).toContain(
          'The gateway does not answer at this address',
        );
        const again = await fx.daemon({ home: d.home, extraConfig: await dashboardConfig() });
        expect(again.url).not.toBe(d.url);
        const fresh = await loggedIn(chromium.browser, again.url);
        await openSession(fresh.page, sessionId);
        const asked = fresh.page.locator('.transcript article.msg-user', { hasText: crashing });
        await asked.getByRole('button', { name: 'Timeline' }).click();
        const timeline = fresh.page.locator('.timeline');
        await timeline.waitFor();
        await fresh.page.screenshot({ path: screenshotPath('dashboard-crash-timeline.png') });
        // The command's card reads unknown at a glance, and the crash marker stands right after it.
        type Attributed = { getAttribute(name: string): string | null };
        const kinds = await timeline
          .locator('li.event')
          .evaluateAll((els) =>
            (els as unknown as Attributed[]).map(
              (el) => `${el.getAttribute('data-kind')}:${el.getAttribute('data-outcome') ?? ''}`,
            ),
          );
        expect(kinds).toEqual(['admitted:', 'started:', 'model:', 'tool:unknown', 'unknown:']);
        expect(await timeline.locator('li[data-kind="tool"]').textContent()).toContain(crashing);
        expect(await timeline.locator('li[data-kind="unknown"]').textContent()).toContain(
          'unknown here, in step 1: the gateway died while it ran',
        );
        expect(await timeline.locator('.meta').textContent()).toMatch(/^unknown/);
        // The queue offers to resolve it.
        await fresh.page.locator('.queue li.unknown', { hasText: 'before-crash' }).waitFor();
        expect(await watch.page.locator('#link-state').getAttribute('data-lost')).toBe('true');
        await fresh.context.close();
      } finally {
        writeFileSync(join(cwd, 'release-crash'), '');
      }
      await watch.context.close();
    },
  );
});
