/**
 * The dashboard's live session view in real Chromium (issue 13, tests 3-6): approvals and clarify
 * answered inline, interrupt, a daemon SIGKILL and restart under an open page, and seed 001's
 * cross-surface cases through the page (a native-created session attached from the page, and a
 * page-created one attached natively), against the real daemon child process.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unhandedPort } from '../shared/ports.js';
import {
  HAVE_CHROMIUM,
  loggedIn,
  openSession,
  screenshotPath,
  sendMessage as send,
  sessionInPage,
  useChromium,
} from './browser.js';
import { nextEvent } from './gateway-harness.js';
import {
  chatRequests,
  dashboardConfig,
  dashboardSession,
  lastToolResult,
  runTurn,
  tempDir,
  useFixture,
} from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

describe.skipIf(!HAVE_CHROMIUM)('the dashboard session view in Chromium', () => {
  it(
    'an approval answered in the page runs the command once; a second context is told it was already resolved',
    { timeout: 90_000 },
    async () => {
      const cwd = tempDir();
      const victim = join(cwd, 'victim');
      mkdirSync(join(victim, 'nested'), { recursive: true });
      writeFileSync(join(victim, 'nested', 'file.txt'), 'doomed');
      const { d, native, sessionId } = await dashboardSession(fx, { cwd, title: 'approvals' });

      const first = await loggedIn(chromium.browser, d.url);
      const second = await loggedIn(chromium.browser, d.url);
      // The second page hears nothing of the session after the approval request (so it still offers
      // the buttons when the first page has answered); replies to its calls still reach it.
      await second.page.routeWebSocket(/\/api\/ws/, (ws) => {
        const server = ws.connectToServer();
        let frozen = false;
        ws.onMessage((m) => server.send(m));
        server.onMessage((m) => {
          const text = String(m);
          if (frozen && text.includes('"session.event"')) return;
          if (text.includes('"approval.request"')) frozen = true;
          ws.send(m);
        });
      });
      await second.page.reload(); // a fresh WebSocket, now through the route
      await openSession(first.page, sessionId);
      await openSession(second.page, sessionId);

      await send(first.page, `run: rm -rf ${victim} && echo removed-victim`);
      await first.page.locator('.prompt.approval .command', { hasText: 'rm -rf' }).waitFor();
      await second.page.locator('.prompt.approval').waitFor();
      await first.page.screenshot({ path: screenshotPath('dashboard-approval.png') });
      expect(existsSync(victim)).toBe(true);

      const done = nextEvent(native, 'turn.complete');
      await first.page.locator('.prompt.approval button[data-choice="once"]').click();
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      await first.page
        .locator('.transcript .tool-output', { hasText: 'removed-victim' })
        .waitFor({ state: 'attached' });
      expect(await first.page.locator('.prompt').count()).toBe(0);
      expect(existsSync(victim)).toBe(false);

      await second.page.locator('.prompt.approval button[data-choice="once"]').click();
      await second.page.getByText('already answered elsewhere').waitFor();
      // The command ran once: one tool result, and the model was asked twice (call, then report).
      const requests = chatRequests(fx.demo);
      expect(requests).toHaveLength(2);
      expect(lastToolResult(requests[1]!)).toContain('removed-victim');
      await first.context.close();
      await second.context.close();
    },
  );

  it('a clarify answered in the page reaches the next model request; Esc interrupts a running turn', async () => {
    const { native, context, page } = await sessionInPage(fx, chromium.browser, { title: 'clarify' });

    await send(page, 'ask: which colour? [red|blue]');
    await page.locator('.prompt.clarify', { hasText: 'which colour?' }).waitFor();
    const answered = nextEvent(native, 'turn.complete');
    await page.locator('.prompt.clarify').getByRole('button', { name: 'blue' }).click();
    expect((await answered).event).toMatchObject({ outcome: 'completed' });
    const requests = chatRequests(fx.demo);
    expect(lastToolResult(requests.at(-1)!)).toContain('blue');
    expect(lastToolResult(requests[0]!)).not.toContain('blue');

    const started = nextEvent(native, 'tool.start');
    await send(page, 'run: sleep 30');
    await started;
    await page.locator('.session-head [data-state="running"]').waitFor();
    const interrupted = nextEvent(native, 'turn.complete');
    await page.getByLabel('Message').press('Escape');
    expect((await interrupted).event).toMatchObject({ outcome: 'interrupted' });
    await page.locator('.session-head [data-state="idle"]').waitFor();
    await context.close();
  });

  it('reattaches after SIGKILL and restart: a message typed while down is sent once, nothing shows twice', async () => {
    const port = await unhandedPort();
    const extraConfig = `${await dashboardConfig()}listener:\n  port: ${port}\n`;
    const { d, context, page } = await sessionInPage(fx, chromium.browser, { title: 'restart' }, extraConfig);
    await send(page, 'before the crash');
    await page.locator('.msg-assistant', { hasText: 'before the crash' }).waitFor();

    await d.kill();
    fx.forget(d);
    await page.waitForSelector('#link-state[data-state="waiting"]');
    await send(page, 'typed while down');
    await page.locator('.queue .unsent', { hasText: 'typed while down' }).waitFor();

    const again = await fx.daemon({ home: d.home, extraConfig });
    expect(again.url).toBe(d.url);
    await page.locator('.msg-assistant', { hasText: 'typed while down' }).waitFor();
    await send(page, 'after the restart');
    await page.locator('.msg-assistant', { hasText: 'after the restart' }).waitFor();

    const users = await page.locator('.msg-user .text').allTextContents();
    expect(users.map((t) => t.replace(/\d.*$/, '').trim())).toEqual([
      'before the crash',
      'typed while down',
      'after the restart',
    ]);
    expect(await page.locator('.msg-assistant').count()).toBe(3);
    const seen = chatRequests(fx.demo).map(
      (r) => r.messages.filter((m) => m.role === 'user').at(-1)?.content,
    );
    expect(seen.filter((t) => t === 'typed while down')).toHaveLength(1);
    await context.close();
  });

  it('seed 001 cross-surface: a native session is listed and attached from the page, and a page session natively', async () => {
    const { d, native, sessionId: a } = await dashboardSession(fx, { title: 'native-made' });
    await runTurn(native, a, 'n1', 'native speaks in A');

    const { context, page } = await loggedIn(chromium.browser, d.url);
    const row = page.locator('.session-row', { hasText: 'native-made' });
    await row.waitFor();
    expect(await row.textContent()).toMatch(/idle/);
    await page.screenshot({ path: screenshotPath('dashboard-sessions.png') });
    await row.getByRole('link').click();
    await page.locator('.msg-user', { hasText: 'native speaks in A' }).waitFor();
    // A turn submitted from the page reaches the native viewer live.
    const heard = nextEvent(native, 'turn.complete', (e) => e.session_id === a);
    await send(page, 'page speaks in A');
    expect(String((await heard).event['final_text'])).toContain('page speaks in A');

    // The reverse: a page-created session, attached and driven natively, streams into the page.
    await page.getByRole('link', { name: 'New session' }).click();
    await page.getByLabel('Title').fill('page-made');
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/#\/s\//);
    const b = decodeURIComponent(page.url().split('#/s/')[1]!);
    await native.call('session.resume', { session_id: b });
    await runTurn(native, b, 'n2', 'native speaks in B');
    await page.locator('.msg-assistant', { hasText: 'native speaks in B' }).waitFor();
    expect(await native.call('session.info', { session_id: b })).toMatchObject({
      source: 'gui',
      title: 'page-made',
    });
    await page.getByRole('link', { name: 'Status' }).click();
    await page.getByText('demo model').waitFor();
    await page.screenshot({ path: screenshotPath('dashboard-status.png'), fullPage: true });
    await context.close();
  });
});
