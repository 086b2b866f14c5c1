/**
 * Issue 31 in real Chromium: Fork on a message opens a new session holding the history up to it,
 * with its lineage shown both ways; Rename, Archive (the list hides it, "Archived" shows it) and
 * Delete (asked first) act through session.title, session.archive and session.delete; the session
 * id and its `gatehouse chat --resume` line are shown to copy.
 */
import { describe, expect, it } from 'vitest';
import { RpcCallError } from '../../src/surfaces/client/rpc-client.js';
import { HAVE_CHROMIUM, openSession, screenshotPath, sessionInPage, useChromium } from './browser.js';
import { nextEvent } from './gateway-harness.js';
import { runTurn, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();
const said = (text: string) => `Demo model (scripted stand-in): you said: ${text}`;

describe.skipIf(!HAVE_CHROMIUM)('managing sessions in Chromium', () => {
  it('forks at a message, renames, archives and deletes', { timeout: 120_000 }, async () => {
    const { d, native, sessionId, page } = await sessionInPage(fx, chromium.browser, {
      title: 'Garden plans',
    });
    await runTurn(native, sessionId, 's1', 'tomatoes');
    await runTurn(native, sessionId, 's2', 'beans');
    const answers = page.locator('.transcript article.msg-assistant');
    await answers.nth(1).waitFor();

    expect(await page.locator('.manage .session-id').textContent()).toBe(sessionId);
    expect(await page.locator('.manage .resume-line').textContent()).toBe(
      `gatehouse chat --resume ${sessionId}`,
    );

    // Fork at the first answer: a new session with the first exchange only.
    await answers.first().getByRole('button', { name: 'Fork' }).click();
    await page.getByRole('heading', { name: 'Garden plans (fork)' }).waitFor();
    const forkId = decodeURIComponent(new URL(page.url()).hash.replace('#/s/', ''));
    expect(forkId).not.toBe(sessionId);
    const lineage = page.locator('.manage .lineage');
    await lineage.waitFor();
    expect(await lineage.textContent()).toMatch(/^Lineage: Forked from Garden plans at message \d+$/);
    await page.locator('.transcript article.msg-assistant').first().waitFor();
    const shown = await page.locator('.transcript article .text, .transcript article .md').allTextContents();
    expect(shown.map((t) => t.trim())).toEqual(['tomatoes', said('tomatoes')]);
    await page.screenshot({ path: screenshotPath('dashboard-fork.png') });

    // Rename it here; the header follows.
    await page.getByRole('button', { name: 'Rename' }).click();
    await page.getByLabel('New title').fill('Tomatoes only');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('heading', { name: 'Tomatoes only' }).waitFor();
    expect(await native.call('session.info', { session_id: forkId })).toMatchObject({
      title: 'Tomatoes only',
    });

    // Archive it: gone from the list, listed under "Archived", still searchable.
    await page.getByRole('button', { name: 'Archive' }).click();
    await page.getByRole('button', { name: 'Unarchive' }).waitFor();
    await page.goto(`${d.url}/#/`);
    await page.locator(`.session-row[data-session="${sessionId}"]`).waitFor();
    expect(await page.locator(`.session-row[data-session="${forkId}"]`).count()).toBe(0);
    await page.getByRole('button', { name: 'Archived' }).click();
    await page.getByRole('heading', { name: 'Archived sessions' }).waitFor();
    await page.locator(`.session-row[data-session="${forkId}"]`).waitFor();
    expect(await page.locator(`.session-row[data-session="${sessionId}"]`).count()).toBe(0);

    // The source names its fork.
    await openSession(page, sessionId);
    await page.locator('.manage .lineage').getByRole('link', { name: 'Tomatoes only' }).waitFor();

    // Delete asks first; "Keep it" keeps it, "Yes, delete" deletes it and goes back to the list.
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Keep it' }).click();
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByRole('button', { name: 'Yes, delete' }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    let refused: string | null = null;
    await native.call('session.info', { session_id: sessionId }).catch((error: unknown) => {
      refused = error instanceof RpcCallError ? error.reason : String(error);
    });
    expect(refused).toBe('not_found');
    // The fork lives on, and says its source is gone.
    await openSession(page, forkId);
    await page.locator('.manage .lineage', { hasText: `Forked from ${sessionId} (deleted)` }).waitFor();
  });

  it('opens a turn as its timeline, tool outcome and approval included', { timeout: 120_000 }, async () => {
    const { native, sessionId, page } = await sessionInPage(fx, chromium.browser, { title: 'Timeline' });
    const asked = nextEvent(native, 'approval.request', (e) => e.session_id === sessionId);
    const done = nextEvent(native, 'admission.settled', (e) => e.session_id === sessionId);
    await native.call('prompt.submit', {
      session_id: sessionId,
      submission_id: 't1',
      text: 'run: touch plot',
    });
    const prompt = (await asked).event;
    await native.call('approval.respond', {
      session_id: sessionId,
      execution_generation: prompt['execution_generation'],
      prompt_id: prompt['prompt_id'],
      choice: 'once',
    });
    await done;
    // A fresh page: the turn's messages come from the store, with their ids and admission.
    await openSession(page, sessionId);
    await page.locator('.transcript article.msg-user').getByRole('button', { name: 'Timeline' }).click();
    const timeline = page.getByLabel('Turn timeline');
    await timeline.waitFor();
    const kinds = await timeline
      .locator('.event')
      .evaluateAll((els) =>
        els.map((e) => String((e as { dataset: Record<string, string> }).dataset['kind'])),
      );
    expect(kinds).toEqual(['admitted', 'started', 'model', 'tool', 'model', 'settled']);
    const tool = timeline.locator('.event-tool');
    expect(await tool.locator('.outcome').textContent()).toBe('succeeded');
    expect(await tool.locator('code').textContent()).toBe('touch plot');
    expect(await tool.textContent()).toContain('approval: once');
    expect(await timeline.locator('.event-settled .outcome').textContent()).toBe('completed');
    await page.screenshot({ path: screenshotPath('dashboard-timeline.png') });
    // The same button closes it.
    await page.locator('.transcript article.msg-user').getByRole('button', { name: 'Timeline' }).click();
    await timeline.waitFor({ state: 'detached' });
  });
});
