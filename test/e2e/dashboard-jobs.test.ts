/**
 * The dashboard's Jobs page in real Chromium (issue 28): a scheduled job is listed with its schedule,
 * next run and last run with its outcome, and Pause, Resume and Remove act on it through the same
 * jobs.* methods the CLI calls.
 */
import { describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, loggedIn, useChromium } from './browser.js';
import { nextEvent } from './gateway-harness.js';
import { dashboardSession, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

describe.skipIf(!HAVE_CHROMIUM)('the Jobs page in Chromium', () => {
  it(
    'shows a job with its next and last run, and pauses, resumes and removes it',
    { timeout: 90_000 },
    async () => {
      const { d, native, sessionId } = await dashboardSession(fx, {});
      const { job } = await native.call<{ job: { job_id: string } }>('jobs.add', {
        request_id: 'j1',
        name: 'hourly check',
        every_s: 3600,
        session_id: sessionId,
        text: 'check the build',
      });
      const done = nextEvent(native, 'turn.complete');
      await native.call('jobs.run_now', { job_id: job.job_id, request_id: 'now' });
      await done;

      const { context, page } = await loggedIn(chromium.browser, d.url);
      await page.getByRole('link', { name: 'Jobs' }).click();
      await page.getByRole('heading', { name: 'Jobs' }).waitFor();
      const row = page.locator(`.job-row[data-job="${job.job_id}"]`);
      await row.waitFor();
      expect(await row.locator('.job-title').textContent()).toBe(
        `hourly check · every 3600s → session ${sessionId}`,
      );
      await row.locator('.job-last', { hasText: 'completed' }).waitFor();
      expect(await row.locator('.job-next').textContent()).toMatch(/^next run: \d{4}-\d\d-\d\dT/);
      expect(await row.locator('.job-state').textContent()).toBe('active');

      await row.getByRole('button', { name: 'Pause' }).click();
      await row.locator('.job-state', { hasText: 'paused: paused by' }).waitFor();
      await row.getByRole('button', { name: 'Resume' }).click();
      await row.locator('.job-state', { hasText: /^active$/ }).waitFor();
      await row.getByRole('button', { name: 'Remove' }).click();
      await page.getByText(`Removed ${job.job_id}.`).waitFor();
      expect(await row.count()).toBe(0);
      const left = await native.call<{ jobs: unknown[] }>('jobs.list', {});
      expect(left.jobs).toEqual([]);
      await context.close();
    },
  );
});
