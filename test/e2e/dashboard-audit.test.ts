/**
 * The dashboard's Audit page in real Chromium (issue 30): the trail the operators read — the
 * dashboard sign-in itself (and a refused one), a member's session created and a refused attempt
 * on it, a share — through the same `audit.list` that `gatehouse audit` calls. No message text.
 */
import { describe, expect, it } from 'vitest';
import { requestTicket } from '../../src/surfaces/control/client.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { httpPost } from '../unit/rpc/harness.js';
import { HAVE_CHROMIUM, loggedIn, useChromium } from './browser.js';
import { dashboardConfig, runTurn, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

describe.skipIf(!HAVE_CHROMIUM)('the Audit page in Chromium', () => {
  it(
    'shows who did what, newest first, refusals included, without message text',
    { timeout: 90_000 },
    async () => {
      const d = await fx.daemon({ extraConfig: await dashboardConfig() });
      const wrong = await httpPost(d.url, '/auth/login', { password: 'not the password' }, { origin: d.url });
      expect(wrong.status).toBe(401);
      const alice = await GatewayClient.connect(
        d.url,
        (await requestTicket(d.layout.controlSocket, 'interactive', undefined, 'alice')).ticket,
      );
      const bob = await GatewayClient.connect(
        d.url,
        (await requestTicket(d.layout.controlSocket, 'interactive', undefined, 'bob')).ticket,
      );
      const { session_id } = await alice.call<{ session_id: string }>('session.create', { cwd: tempDir() });
      await alice.call('session.resume', { session_id });
      await runTurn(alice, session_id, 'a1', 'a private thought');
      await expect(
        bob.call('prompt.submit', { session_id, submission_id: 'b1', text: 'x' }),
      ).rejects.toMatchObject({
        reason: 'not_found',
      });

      const { context, page } = await loggedIn(chromium.browser, d.url);
      await page.getByRole('link', { name: 'Audit' }).click();
      await page.getByRole('heading', { name: 'Audit' }).waitFor();
      await page.locator('.audit-row').first().waitFor();
      const rows: string[][] = [];
      for (const tr of await page.locator('.audit-row').all())
        rows.push((await tr.locator('td').allTextContents()).slice(1, 6));
      expect(rows).toEqual([
        ['dashboard:owner', 'password', 'signed_in', '—', 'ok'],
        ['member:bob', 'native', 'submitted', session_id, 'not_found'],
        ['member:alice', 'native', 'submitted', session_id, 'ok'],
        ['member:alice', 'native', 'created', session_id, 'ok'],
        ['dashboard:owner', 'password', 'signed_in', '—', 'bad_password'],
      ]);
      expect(await page.locator('table.audit').textContent()).not.toContain('a private thought');
      await context.close();
      await Promise.all([alice.close(), bob.close()]);
    },
  );
});
