/**
 * The dashboard and the real terminal chat on one session (issue 13, AUTH-4 shared access): a
 * session made by `gatehouse chat` is opened in the page, and a page-made one with `gatehouse chat
 * --resume`, and each sees the other's turn live — the real CLI child process, the real daemon and
 * real Chromium.
 */
import { describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, loggedIn, sendMessage, useChromium } from './browser.js';
import { finished, runCli, spawnCli, waitForOutput } from './cli.js';
import { dashboardConfig, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

describe.skipIf(!HAVE_CHROMIUM)('the dashboard beside gatehouse chat', () => {
  it(
    'a gatehouse chat session opens in the page; a page session resumes in gatehouse chat; both see each other live',
    { timeout: 150_000 },
    async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const made = await runCli(d.home, ['chat', '--cwd', tempDir()], { input: 'typed in the terminal\n' });
      expect(made.code).toBe(0);
      const terminalId = /gatehouse chat --resume (\S+)/.exec(made.stdout)![1]!;

      const { context, page } = await loggedIn(chromium.browser, d.url);
      const row = page.locator(`.session-row[data-session="${terminalId}"]`);
      await row.getByText('cli ·').waitFor();
      await row.getByRole('link').click();
      await page.locator('.msg-user', { hasText: 'typed in the terminal' }).waitFor();
      await page.locator('.msg-assistant', { hasText: 'you said: typed in the terminal' }).waitFor();

      // A page-made session, resumed in a terminal that stays open: each side's turn reaches the other.
      await page.getByRole('link', { name: 'New session' }).click();
      await page.getByLabel('Title').fill('made in the page');
      await page.getByRole('button', { name: 'Create' }).click();
      await page.waitForURL(/#\/s\//);
      const pageId = decodeURIComponent(page.url().split('#/s/')[1]!);
      await sendMessage(page, 'first words from the page');
      await page.locator('.msg-assistant', { hasText: 'you said: first words from the page' }).waitFor();

      const chat = spawnCli(d.home, ['chat', '--resume', pageId]);
      const run = finished(chat);
      await waitForOutput(chat, 'first words from the page');
      const heard = waitForOutput(chat, 'you said: the page speaks live');
      await sendMessage(page, 'the page speaks live');
      await heard;

      const answered = waitForOutput(chat, 'you said: the terminal speaks live');
      chat.stdin!.write('the terminal speaks live\n');
      await answered;
      await page.locator('.msg-user', { hasText: 'the terminal speaks live' }).waitFor();
      await page.locator('.msg-assistant', { hasText: 'you said: the terminal speaks live' }).waitFor();
      chat.stdin!.end();
      expect((await run).code).toBe(0);

      // Each turn once in the page, in order.
      const users = (await page.locator('.msg-user .text').allTextContents()).map((t) => t.trim());
      expect(users).toEqual([
        'first words from the page',
        'the page speaks live',
        'the terminal speaks live',
      ]);
      const native = await d.connect();
      expect(await native.call('session.info', { session_id: pageId })).toMatchObject({ source: 'gui' });
      expect(await native.call('session.info', { session_id: terminalId })).toMatchObject({ source: 'cli' });
      await context.close();
    },
  );
});
