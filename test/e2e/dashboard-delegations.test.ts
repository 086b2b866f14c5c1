/**
 * A session's background delegations on its dashboard page, in real Chromium (issue 28): each one
 * is listed with its task, state and child session; Keep and Stop act on it through the same
 * delegation.* methods the CLI calls, and a delegation that ends shows its outcome.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, loggedIn, openSession, screenshotPath, useChromium } from './browser.js';
import { dashboardSession, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

interface Started {
  delegation: { delegation_id: string; child_session_id: string };
}

describe.skipIf(!HAVE_CHROMIUM)("a session's delegations in Chromium", () => {
  it(
    'lists them with their child session, keeps and stops one, and shows how one ended',
    { timeout: 90_000 },
    async () => {
      const cwd = tempDir();
      const { d, native, sessionId } = await dashboardSession(fx, {
        cwd,
        yolo: true,
        toolsets: ['terminal', 'delegation'],
      });
      const waits = await native.call<Started>('delegation.start', {
        session_id: sessionId,
        request_id: 'waits',
        task: 'run: touch started; while [ ! -e go ]; do sleep 0.05; done',
      });
      const { delegation } = waits;
      // The child's command runs: the delegation is going when the page opens.
      const end = Date.now() + 30_000;
      while (!existsSync(join(cwd, 'started')) && Date.now() < end)
        await new Promise((r) => setTimeout(r, 50));

      const { context, page } = await loggedIn(chromium.browser, d.url);
      await openSession(page, sessionId);
      const row = page.locator(`.delegation-row[data-delegation="${delegation.delegation_id}"]`);
      await row.waitFor();
      expect(await row.locator('.delegation-task').textContent()).toBe(
        'run: touch started; while [ ! -e go ]; do sleep 0.05; done',
      );
      expect(await row.locator('.delegation-state').textContent()).toBe('running');
      expect(await row.locator('.delegation-child').getAttribute('href')).toBe(
        `#/s/${encodeURIComponent(delegation.child_session_id)}`,
      );

      await row.getByRole('button', { name: 'Keep' }).click();
      await row.locator('.delegation-state', { hasText: 'running (kept)' }).waitFor();
      expect(await row.getByRole('button', { name: 'Keep' }).count()).toBe(0);
      await page.screenshot({ path: screenshotPath('dashboard-delegations.png') });
      await row.getByRole('button', { name: 'Stop' }).click();
      await page.getByText(`Stopped ${delegation.delegation_id}.`).waitFor();
      await row.locator('.delegation-state', { hasText: /^stopped: stopped \(stopped by / }).waitFor();
      expect(await row.getByRole('button').count()).toBe(0);
      writeFileSync(join(cwd, 'go'), '');

      // One started while the page is open shows up, and shows its outcome once its result arrived.
      const hello = await native.call<Started>('delegation.start', {
        session_id: sessionId,
        request_id: 'hello',
        task: 'hello child',
      });
      const done = page.locator(`.delegation-row[data-delegation="${hello.delegation.delegation_id}"]`);
      await done.locator('.delegation-state', { hasText: 'reported: completed' }).waitFor();
      const { delegations } = await native.call<{
        delegations: { delegation_id: string; state: string; kept: boolean }[];
      }>('delegation.list', { session_id: sessionId });
      expect(delegations.map((x) => [x.delegation_id, x.state, x.kept])).toEqual([
        [delegation.delegation_id, 'stopped', true],
        [hello.delegation.delegation_id, 'reported', false],
      ]);
      await context.close();
    },
  );
});
