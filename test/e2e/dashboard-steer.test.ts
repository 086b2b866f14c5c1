/**
 * The dashboard's steer box in real Chromium (issue 28, docs/dashboard.md): offered only while a
 * turn runs; a steer typed there goes through session.steer, the running turn's next model call
 * sees it, and the transcript shows it where the model saw it (after the tool call, before the
 * answer), marked as a steer.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, sendMessage, sessionInPage, useChromium } from './browser.js';
import { nextEvent } from './gateway-harness.js';
import { chatRequests, tempDir, useFixture } from './seed-fixture.js';
import { DEMO_LABEL } from '../../src/runtime/demo/script.js';

const fx = useFixture();
const chromium = useChromium();

/** A tool call that waits until the test creates `go` in the session's cwd (a condition, not a sleep). */
const WAIT_FOR_GO = 'run: while [ ! -e go ]; do sleep 0.05; done; echo first';

describe.skipIf(!HAVE_CHROMIUM)('the steer box in Chromium', () => {
  it(
    'is offered while a turn runs; the steer reaches the next model call and shows in the transcript where the model saw it',
    { timeout: 90_000 },
    async () => {
      const cwd = tempDir();
      const { native, sessionId, context, page } = await sessionInPage(fx, chromium.browser, {
        cwd,
        yolo: true,
      });
      const box = page.locator('form.steer');
      expect(await box.isHidden()).toBe(true);

      const running = nextEvent(native, 'tool.start', (e) => e.session_id === sessionId);
      await sendMessage(page, WAIT_FOR_GO);
      await running;
      await box.waitFor({ state: 'visible' });

      const applied = nextEvent(native, 'steer.applied', (e) => e.session_id === sessionId);
      const done = nextEvent(native, 'turn.complete', (e) => e.session_id === sessionId);
      await page.getByLabel('Steer the running turn').fill('actually, use staging');
      await box.getByRole('button', { name: 'Steer' }).click();
      await page.getByText('Steer saved: the running turn gets it before its next model call').waitFor();
      writeFileSync(join(cwd, 'go'), '');
      expect((await applied).event).toMatchObject({ text: 'actually, use staging' });
      expect((await done).event).toMatchObject({ outcome: 'completed' });

      // The model's last call ended with the steer, right after the tool's result.
      const last = chatRequests(fx.demo).at(-1)!.messages;
      expect(last.slice(-2).map((m) => m.role)).toEqual(['tool', 'user']);
      expect(last.at(-1)!.content).toBe('actually, use staging');

      const answer = `${DEMO_LABEL}: you said: actually, use staging`;
      await page.locator('.transcript .msg-assistant', { hasText: answer }).waitFor();
      await box.waitFor({ state: 'hidden' });
      const shown: string[] = [];
      const articles = page.locator('.transcript article');
      for (let i = 0; i < (await articles.count()); i++) {
        const article = articles.nth(i);
        if ((await article.getAttribute('class'))?.includes('msg-steer'))
          shown.push(`steer: ${await article.locator('.text').textContent()}`);
        else if ((await article.locator('details.tool').count()) > 0) shown.push('tool call');
        else
          shown.push(
            `${await article.getAttribute('data-role')}: ${(await article.locator('.text, .md').first().textContent())?.trim()}`,
          );
      }
      expect(shown).toEqual([
        `user: ${WAIT_FOR_GO}`,
        'tool call',
        'steer: actually, use staging',
        `assistant: ${answer}`,
      ]);
      // After a reload the stored transcript says the same: the steer is where the model saw it.
      await page.reload();
      await page.locator('.transcript .msg-steer .text', { hasText: 'actually, use staging' }).waitFor();
      expect(await page.locator('.transcript article').count()).toBe(4);
      await context.close();
    },
  );
});
