/**
 * The session page's controls in real Chromium (issue 13): Compress, Retry, Undo and Reset (the
 * destructive ones asking first), Model (issue 26 item 6), the keyboard (Enter sends, Shift-Enter breaks the line, Esc
 * interrupts), the phone-width layout, and the editor an acp session came from — against the real
 * daemon child process and the demo model of the test process.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import {
  HAVE_CHROMIUM,
  loggedIn,
  openSession,
  PHONE,
  screenshotPath,
  sendMessage,
  sessionInPage,
  useChromium,
} from './browser.js';
import { startDemoModel } from '../../src/runtime/demo/server.js';
import { nextEvent } from './gateway-harness.js';
import {
  chatRequests,
  dashboardConfig,
  dashboardSession,
  runTurn,
  type Snapshot,
  useFixture,
} from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

const said = (text: string) => `you said: ${text}`;

async function userTexts(client: GatewayClient, session_id: string): Promise<string[]> {
  const snapshot = await client.call<Snapshot>('session.resume', { session_id });
  return snapshot.messages.filter((m) => m.role === 'user').map((m) => String(m.content));
}

async function shownUsers(page: Page): Promise<string[]> {
  return (await page.locator('.msg-user .text').allTextContents()).map((t) => t.trim());
}

/** Clicks an action, then (when it asks) the confirmation's "Yes" button. */
async function act(page: Page, label: string, confirm: boolean): Promise<void> {
  await page.getByRole('group', { name: 'Session actions' }).getByRole('button', { name: label }).click();
  if (confirm) {
    const dialog = page.getByRole('alertdialog', { name: `Confirm ${label}` });
    await dialog.getByRole('button', { name: `Yes, ${label.toLowerCase()}` }).click();
  }
}

describe.skipIf(!HAVE_CHROMIUM)('the dashboard session controls in Chromium', () => {
  it(
    'Undo, Retry, Compress and Reset act on the session; the destructive ones ask first',
    { timeout: 120_000 },
    async () => {
      const {
        d,
        native,
        sessionId: id,
      } = await dashboardSession(
        fx,
        { title: 'controls' },
        `${await dashboardConfig()}compression:\n  tail_tokens: 10\n`,
      );
      const turns = ['one', 'two', 'three', 'four', 'five'];
      for (const text of turns) await runTurn(native, id, text, text);
      const { context, page } = await loggedIn(chromium.browser, d.url);
      await openSession(page, id);
      await page.locator('.msg-assistant', { hasText: said('five') }).waitFor();

      // Undo asks; "Keep it" changes nothing.
      await page.getByRole('button', { name: 'Undo' }).click();
      const ask = page.getByRole('alertdialog', { name: 'Confirm Undo' });
      await ask.getByText('taken out of the history').waitFor();
      await ask.getByRole('button', { name: 'Keep it' }).click();
      await ask.waitFor({ state: 'detached' });
      expect(await userTexts(native, id)).toEqual(turns);

      // Undo: the last turn leaves the page and the store; its text comes back to the composer.
      await act(page, 'Undo', true);
      await page.getByRole('status').getByText('The last turn was undone.').waitFor();
      await expect.poll(() => shownUsers(page)).toEqual(turns.slice(0, 4));
      expect(await page.getByLabel('Message').inputValue()).toBe('five');
      expect(await userTexts(native, id)).toEqual(turns.slice(0, 4));

      // Retry: the last message runs again, once.
      const asked = chatRequests(fx.demo).length;
      const retried = nextEvent(native, 'turn.complete', (e) => e.session_id === id);
      await act(page, 'Retry', true);
      expect(String((await retried).event['final_text'])).toContain(said('four'));
      await page.locator('.msg-assistant', { hasText: said('four') }).waitFor();
      await expect.poll(() => shownUsers(page)).toEqual(turns.slice(0, 4));
      expect(await page.locator('.msg-assistant').count()).toBe(4);
      const requests = chatRequests(fx.demo).slice(asked);
      expect(requests).toHaveLength(1);
      expect(requests[0]!.messages.filter((m) => m.role === 'user').at(-1)?.content).toBe('four');

      // Compress runs at once and says what the model now sees.
      const compressed = nextEvent(native, 'session.compressed', (e) => e.session_id === id);
      await act(page, 'Compress', false);
      await page
        .getByRole('status')
        .getByText(/^Compressed: the model now sees \d+ messages/)
        .waitFor();
      expect((await compressed).event).toMatchObject({ reason: 'manual' });

      // Reset: an empty history in the page and in the store; the session goes on.
      await act(page, 'Reset', true);
      await page.getByRole('status').getByText('The history was reset').waitFor();
      await expect.poll(() => page.locator('.transcript .msg').count()).toBe(0);
      expect(await userTexts(native, id)).toEqual([]);
      await page.getByLabel('Message').fill('');
      await sendMessage(page, 'after the reset');
      await page.locator('.msg-assistant', { hasText: said('after the reset') }).waitFor();
      expect(await shownUsers(page)).toEqual(['after the reset']);
      expect(await userTexts(native, id)).toEqual(['after the reset']);
      await context.close();
    },
  );

  it(
    'Model offers the configured models and moves the session; the header and the next turn follow',
    { timeout: 120_000 },
    async () => {
      const spare = await startDemoModel();
      try {
        const providers = `providers:\n  spare:\n    base_url: ${spare.baseUrl}\n    models: [spare-small, spare-large]\n`;
        const {
          d,
          native,
          sessionId: id,
        } = await dashboardSession(fx, { title: 'model' }, `${await dashboardConfig()}${providers}`);
        const { context, page } = await loggedIn(chromium.browser, d.url);
        await openSession(page, id);
        await page
          .getByRole('group', { name: 'Session actions' })
          .getByRole('button', { name: 'Model' })
          .click();
        const chooser = page.getByRole('group', { name: 'Choose a model' });
        const select = chooser.getByLabel('Model', { exact: true });
        await select.waitFor();
        expect(await select.locator('option').allTextContents()).toEqual([
          'default/gatehouse-demo',
          'spare/spare-small',
          'spare/spare-large',
        ]);
        expect(await select.inputValue()).toBe('default/gatehouse-demo');
        await select.selectOption('spare/spare-large');
        await chooser.getByRole('button', { name: 'Move' }).click();
        await page.getByRole('status').getByText('The session now runs on spare/spare-large').waitFor();
        await page.locator('.meta', { hasText: 'spare-large' }).waitFor();
        expect(await native.call('session.info', { session_id: id })).toMatchObject({
          provider: 'spare',
          model: 'spare-large',
        });
        await sendMessage(page, 'on the spare');
        await page.locator('.msg-assistant', { hasText: said('on the spare') }).waitFor();
        expect(chatRequests(spare).map((body) => body.model)).toEqual(['spare-large']);
        await context.close();
      } finally {
        await spare.close();
      }
    },
  );

  it(
    'the keyboard: Shift-Enter breaks the line, Enter sends, Esc interrupts; only Compress while running',
    { timeout: 90_000 },
    async () => {
      const {
        native,
        sessionId: id,
        context,
        page,
      } = await sessionInPage(fx, chromium.browser, { title: 'keys' });

      const input = page.getByLabel('Message');
      await input.click();
      await page.keyboard.type('line one');
      await page.keyboard.press('Shift+Enter');
      await page.keyboard.type('line two');
      expect(await input.inputValue()).toBe('line one\nline two');
      expect(await page.locator('.msg-user').count()).toBe(0);
      const done = nextEvent(native, 'turn.complete', (e) => e.session_id === id);
      await page.keyboard.press('Enter');
      expect(String((await done).event['final_text'])).toContain('line one\nline two');
      expect(await userTexts(native, id)).toEqual(['line one\nline two']);
      expect(await input.inputValue()).toBe('');
      await page.locator('.msg-assistant', { hasText: 'line two' }).waitFor();

      const started = nextEvent(native, 'tool.start', (e) => e.session_id === id);
      await sendMessage(page, 'run: sleep 30');
      await started;
      await page.locator('.session-head [data-state="running"]').waitFor();
      const actions = page.getByRole('group', { name: 'Session actions' });
      for (const label of ['Retry', 'Undo', 'Reset'])
        expect(await actions.getByRole('button', { name: label }).isDisabled()).toBe(true);
      expect(await actions.getByRole('button', { name: 'Compress' }).isDisabled()).toBe(false);
      const interrupted = nextEvent(native, 'turn.complete', (e) => e.session_id === id);
      await input.press('Escape');
      expect((await interrupted).event).toMatchObject({ outcome: 'interrupted' });
      await page.locator('.session-head [data-state="idle"]').waitFor();
      expect(await actions.getByRole('button', { name: 'Reset' }).isDisabled()).toBe(false);
      await context.close();
    },
  );

  it(
    'at phone width (390x844) the list, a session and the composer fit the screen and work by touch',
    { timeout: 90_000 },
    async () => {
      const { d, native, sessionId: id } = await dashboardSession(fx, { title: 'on the phone' });
      await runTurn(native, id, 'p1', 'a message with a long unbroken word ' + 'x'.repeat(120));
      const { context, page } = await loggedIn(chromium.browser, d.url, PHONE);
      const overflow = () =>
        page.evaluate(() => {
          const root = (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } })
            .document.documentElement;
          return root.scrollWidth;
        });

      const row = page.locator('.session-row', { hasText: 'on the phone' });
      await row.waitFor();
      expect(await overflow()).toBeLessThanOrEqual(390);
      await row.getByRole('link').tap();
      await page.locator('.msg-user', { hasText: 'a message with' }).waitFor();
      expect(await overflow()).toBeLessThanOrEqual(390);

      const input = page.getByLabel('Message');
      const box = (await input.boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(390);
      await input.tap();
      await input.fill('sent from a phone');
      const send = page.getByRole('button', { name: 'Send' });
      const sendBox = (await send.boundingBox())!;
      expect(sendBox.x + sendBox.width).toBeLessThanOrEqual(390);
      await send.tap();
      await page.locator('.msg-assistant', { hasText: said('sent from a phone') }).waitFor();
      expect(await overflow()).toBeLessThanOrEqual(390);
      await page.screenshot({ path: screenshotPath('dashboard-phone.png') });
      await context.close();
    },
  );

  it(
    'an acp session shows the editor it came from when session.info reports one',
    { timeout: 90_000 },
    async () => {
      const { native, sessionId, context, page } = await sessionInPage(fx, chromium.browser, {
        title: 'from an editor',
        source: 'acp',
        editor: 'Zed',
      });
      const info = await native.call<{ editor?: string | null }>('session.info', { session_id: sessionId });
      const meta = page.locator('.session-head .meta');
      await meta.getByText('acp').waitFor();
      // session.info records the editor of an acp session, and the page shows it.
      expect(info.editor).toBe('Zed');
      await meta.locator('.editor', { hasText: 'from Zed' }).waitFor();
      await context.close();
    },
  );
});
