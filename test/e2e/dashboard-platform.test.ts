/**
 * A chat-platform session in the dashboard (issue 13, docs/decisions.md): the real daemon with the
 * Telegram adapter against the stand-in Bot API, and real Chromium. An operator sees the session,
 * its transcript, and the approval its running turn waits for, and answers it from the page: the
 * command runs once, the chat hears the result, and the chat's own /approve finds nothing waiting.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, loggedIn, useChromium } from './browser.js';
import { dashboardClient, dashboardConfig } from './seed-fixture.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const tg = useTelegramDaemon({ yaml: (await dashboardConfig()).trimEnd().split('\n') });
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'gh-e2e-dashboard-platform-'));
const chromium = useChromium();

afterAll(() => fs.rmSync(scratch, { recursive: true, force: true }));

const CHAT = { id: 811, type: 'private' as const };
const USER = { id: 811, first_name: 'Nadia' };

describe.skipIf(!HAVE_CHROMIUM)('a chat-platform session in the dashboard', () => {
  it(
    'shows its transcript and its open approval; approving in the page runs the command once',
    { timeout: 120_000 },
    async () => {
      const daemon = await tg.start();
      expect(await tg.ask(CHAT, USER, 'hello from the chat')).toMatch(/you said: hello from the chat$/);
      const doomed = path.join(scratch, 'doomed');
      fs.mkdirSync(doomed);
      fs.writeFileSync(path.join(doomed, 'file.txt'), 'x');
      expect(await tg.ask(CHAT, USER, `run: rm -rf ${doomed}`)).toMatch(/^Approval needed/);

      const { context, page } = await loggedIn(chromium.browser, daemon.url);
      const row = page.locator('.session-row', { hasText: 'telegram' });
      await row.getByRole('link').click();
      await page.waitForURL(/#\/p\//);
      await page.locator('.msg-user', { hasText: 'hello from the chat' }).waitFor();
      await page.locator('.msg-assistant', { hasText: 'you said: hello from the chat' }).waitFor();
      const card = page.locator('.prompt.approval');
      await card.locator('.command', { hasText: 'rm -rf' }).waitFor();
      expect(await page.getByLabel('Message').count()).toBe(0);
      expect(fs.existsSync(doomed)).toBe(true);
      // What the page read: session.messages carries the open prompt of a platform session.
      const sessionId = decodeURIComponent(page.url().split('#/p/')[1]!);
      const client = await dashboardClient(daemon.url);
      const read = await client.call<{ prompts: { prompt_id: string; execution_generation: number }[] }>(
        'session.messages',
        { session_id: sessionId },
      );
      expect(read.prompts).toHaveLength(1);
      const open = read.prompts[0]!;

      await card.locator('button[data-choice="once"]').click();
      await tg.waitForText(CHAT.id, /the tool `terminal` returned/);
      expect(fs.existsSync(doomed)).toBe(false);
      await card.waitFor({ state: 'detached' });
      expect(await tg.ask(CHAT, USER, '/approve')).toBe('No approval is waiting.');

      // The same prompt answered again (another page, a stale client) is reported, not re-run.
      const again = { session_id: sessionId, execution_generation: open.execution_generation };
      expect(
        await client.call('approval.respond', { ...again, prompt_id: open.prompt_id, choice: 'once' }),
      ).toMatchObject({ status: 'already_resolved' });
      const stale = { ...again, prompt_id: 'no-such-prompt' };
      await expect(client.call('approval.respond', { ...stale, choice: 'once' })).rejects.toMatchObject({
        reason: 'not_found',
      });
      await expect(
        client.call('approval.respond', { ...stale, session_id: 'no-such-session', choice: 'once' }),
      ).rejects.toMatchObject({ reason: 'not_found' });
      await context.close();
    },
  );
});
