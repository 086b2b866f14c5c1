/**
 * The dashboard's queue, prompts and reconnects in real Chromium (issue 13): an approval card with
 * its secret masked and denied, queued admissions with Cancel, an `unknown` admission left by a
 * daemon SIGKILL with Resolve, and a dropped connection caught up from its cursor with
 * `session.events.since` — against the real daemon child process and the demo model.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unhandedPort } from '../shared/ports.js';
import {
  HAVE_CHROMIUM,
  loggedIn,
  openSession,
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

const said = (text: string) => `you said: ${text}`;

describe.skipIf(!HAVE_CHROMIUM)('the dashboard queue, prompts and reconnects in Chromium', () => {
  it(
    'queued messages are listed with Cancel; after a SIGKILL the interrupted turn shows as unknown with Resolve, and the queue goes on',
    { timeout: 150_000 },
    async () => {
      const port = await unhandedPort();
      const extraConfig = `${await dashboardConfig()}listener:\n  port: ${port}\n`;
      const { d, native, sessionId, context, page } = await sessionInPage(
        fx,
        chromium.browser,
        { title: 'queue', yolo: true },
        extraConfig,
      );

      const started = nextEvent(native, 'tool.start', (e) => e.session_id === sessionId);
      await send(page, 'run: sleep 60');
      await started;
      await page.locator('.session-head [data-state="running"]').waitFor();
      // admission.queued carries the text, so every viewer can list what waits.
      const queued = nextEvent(native, 'admission.queued', (e) => e.session_id === sessionId);
      await send(page, 'cancel me');
      expect((await queued).event).toMatchObject({ text: 'cancel me' });
      await send(page, 'keep me');
      const cancelled = page.locator('.queue li.queued', { hasText: 'cancel me' });
      await cancelled.waitFor();
      await page.locator('.queue li.queued', { hasText: 'keep me' }).waitFor();
      await cancelled.getByRole('button', { name: 'Cancel' }).click();
      await cancelled.waitFor({ state: 'detached' });
      const pending = await native.call<{ pending_admissions: { text?: string; state: string }[] }>(
        'session.resume',
        { session_id: sessionId },
      );
      expect(pending.pending_admissions.map((a) => a.state)).toEqual(['running', 'queued']);

      // The daemon dies with the command running: its turn's outcome is unknown after the restart.
      await d.kill();
      fx.forget(d);
      await fx.daemon({ home: d.home, extraConfig });
      const unknown = page.locator('.queue li.unknown');
      await unknown.waitFor();
      expect(await unknown.textContent()).toContain('run: sleep 60');
      await page.locator('.session-head [data-state="unknown"]').waitFor();
      await page.locator('.queue li.queued', { hasText: 'keep me' }).waitFor();
      expect(await page.locator('.msg-assistant', { hasText: said('keep me') }).count()).toBe(0);

      await unknown.getByRole('button', { name: 'Resolve' }).click();
      await unknown.waitFor({ state: 'detached' });
      // The queue goes on: the message kept runs; the cancelled one never reaches the model.
      await page.locator('.msg-assistant', { hasText: said('keep me') }).waitFor();
      await page.locator('.session-head [data-state="idle"]').waitFor();
      const users = chatRequests(fx.demo).map(
        (r) => r.messages.filter((m) => m.role === 'user').at(-1)?.content,
      );
      expect(users).toContain('keep me');
      expect(users).not.toContain('cancel me');
      await context.close();
    },
  );

  it(
    'a dropped connection catches up with session.events.since from its cursor: what happened meanwhile shows once',
    { timeout: 90_000 },
    async () => {
      const { d, native, sessionId } = await dashboardSession(fx, { title: 'blip' });
      const { context, page } = await loggedIn(chromium.browser, d.url);
      // The page's WebSocket through a route the test can cut (a network blip, the daemon up).
      const sockets: { close(): Promise<void> }[] = [];
      const sent: { id: number; method: string }[] = [];
      const replies = new Map<number, Record<string, unknown>>();
      let cut = false;
      await page.routeWebSocket(/\/api\/ws/, (ws) => {
        if (cut) return void ws.close();
        sockets.push(ws);
        const server = ws.connectToServer();
        ws.onMessage((m) => {
          const frame = JSON.parse(String(m)) as { id?: number; method?: string };
          if (frame.id !== undefined && frame.method) sent.push({ id: frame.id, method: frame.method });
          server.send(m);
        });
        server.onMessage((m) => {
          const frame = JSON.parse(String(m)) as { id?: number };
          if (frame.id !== undefined) replies.set(frame.id, frame);
          ws.send(m);
        });
      });
      await page.reload();
      await openSession(page, sessionId);
      await send(page, 'before the blip');
      await page.locator('.msg-assistant', { hasText: said('before the blip') }).waitFor();

      cut = true;
      for (const ws of sockets.splice(0)) await ws.close();
      await page.waitForSelector('#link-state[data-state="waiting"]');
      await runTurn(native, sessionId, 'away', 'while the page was away');
      const before = sent.length;
      cut = false;
      await page.locator('.msg-assistant', { hasText: said('while the page was away') }).waitFor();

      const catchUp = sent.slice(before).find((f) => f.method === 'session.events.since');
      expect(catchUp).toBeDefined();
      await expect.poll(() => replies.has(catchUp!.id)).toBe(true);
      const reply = replies.get(catchUp!.id)!;
      expect(reply['error']).toBeUndefined();
      expect((reply['result'] as { events: unknown[] }).events.length).toBeGreaterThan(0);
      expect(await page.locator('.msg-user .text').allTextContents()).toEqual([
        'before the blip',
        'while the page was away',
      ]);
      expect(await page.locator('.msg-assistant').count()).toBe(2);
      await context.close();
    },
  );

  it(
    'an approval card shows the command with its secret masked and the reason; Deny leaves the files alone',
    { timeout: 90_000 },
    async () => {
      const cwd = tempDir();
      const kept = join(cwd, 'kept');
      mkdirSync(kept);
      const { native, sessionId, context, page } = await sessionInPage(fx, chromium.browser, {
        cwd,
        title: 'deny',
      });

      await send(page, `run: API_TOKEN=hunter2hunter2hunter2 rm -rf ${kept}`);
      const card = page.locator('.prompt.approval');
      await card.waitFor();
      expect(await card.locator('.command').textContent()).toBe(`API_TOKEN=*** rm -rf ${kept}`);
      expect(await card.textContent()).not.toContain('hunter2');
      expect(await card.textContent()).toContain('deletes files recursively');
      const done = nextEvent(native, 'turn.complete', (e) => e.session_id === sessionId);
      await card.getByRole('button', { name: 'Deny' }).click();
      await done;
      await card.waitFor({ state: 'detached' });
      expect(existsSync(kept)).toBe(true);
      expect(lastToolResult(chatRequests(fx.demo).at(-1)!)).toMatch(/denied/i);
      await context.close();
    },
  );
});
