/**
 * The dashboard's Approvals page in real Chromium (issue 25): an `always` answer given in a session
 * is listed with the exact command and its directory, and "Revoke" forgets it — through the same
 * `approvals.list` / `approvals.revoke` methods the CLI calls — so the command asks again.
 */
import { describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, loggedIn, openSession, useChromium } from './browser.js';
import { nextEvent } from './gateway-harness.js';
import { dashboardSession, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

describe.skipIf(!HAVE_CHROMIUM)('the Approvals page in Chromium', () => {
  it('lists a remembered `always` approval and revokes it', { timeout: 90_000 }, async () => {
    const cwd = tempDir();
    const { d, native, sessionId } = await dashboardSession(fx, { cwd });
    const { context, page } = await loggedIn(chromium.browser, d.url);
    await openSession(page, sessionId);
    const done = nextEvent(native, 'turn.complete');
    await native.call('prompt.submit', {
      session_id: sessionId,
      submission_id: 'a1',
      text: 'run: touch approved-always',
    });
    // The card states what "always" would approve, then the human answers it there.
    const card = page.locator('.prompt.approval');
    await card.waitFor();
    expect(await card.locator('.scope').textContent()).toBe(
      `"session" approves this exact command in ${cwd}, for this session; "always" approves this exact command in ${cwd}, from now on`,
    );
    await card.getByRole('button', { name: 'Always allow' }).click();
    await done;

    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('heading', { name: 'Approvals' }).waitFor();
    const always = page.locator('.approval-row', { hasText: 'always ·' });
    await always.waitFor();
    expect(await always.locator('code.command').textContent()).toBe('touch approved-always');
    expect(await always.locator('.meta').textContent()).toContain(`in ${cwd}`);
    const id = await always.getAttribute('data-approval');
    expect(id).toMatch(/^apr_[0-9a-f]{16}$/);

    await always.getByRole('button', { name: 'Revoke' }).click();
    await page.getByText(`Revoked ${id}: that command asks again.`).waitFor();
    const left = await native.call<{ approvals: { id: string; scope: string }[] }>('approvals.list', {});
    expect(left.approvals.filter((a) => a.scope === 'always')).toEqual([]);
    await context.close();
  });
});
