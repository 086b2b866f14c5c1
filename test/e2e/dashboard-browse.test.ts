/**
 * The dashboard's list, transcript and queue in real Chromium (issue 13): the session list a page
 * at a time by recent activity, search, a long transcript opened on its newest page with earlier
 * pages on demand, a turn streaming live (text and reasoning deltas, reasoning dimmed, the tool
 * call collapsible with its output), the new-session form limited to the creation contract, and
 * the status page's counters — against the real daemon child process and the demo model. The
 * queue, prompts and reconnects are in dashboard-queue.test.ts.
 */
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { startDemoModel, type DemoModelServer } from '../../src/runtime/demo/server.js';
import { SqliteSessionStore } from '../../src/storage/sqlite/session-store.js';
import { HAVE_CHROMIUM, loggedIn, openSession, sendMessage as send, useChromium } from './browser.js';
import { nextEvent, startDaemon, type RunningDaemon } from './gateway-harness.js';
import {
  createAttached,
  dashboardConfig,
  dashboardSession,
  runTurn,
  tempDir,
  useFixture,
} from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();
const extra: { demo?: DemoModelServer; daemon?: RunningDaemon } = {};

afterEach(async () => {
  await extra.daemon?.stop();
  await extra.demo?.close();
  delete extra.daemon;
  delete extra.demo;
});

/** Titles of the listed sessions, top to bottom. */
async function listedTitles(page: Page): Promise<string[]> {
  return page.locator('.session-row .title').allTextContents();
}

/** Writes `n` alternating user/assistant messages straight into a session's stored transcript. */
async function seedTranscript(home: string, sessionId: string, n: number): Promise<void> {
  const store = SqliteSessionStore.open(homeLayout(home).stateDb('default'));
  await store.appendToTranscript(
    sessionId,
    Array.from({ length: n }, (_, i) => ({
      role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
      content: `stored message ${i}`,
    })),
  );
  await store.close();
}

describe.skipIf(!HAVE_CHROMIUM)(
  'the dashboard list, transcript, new-session form and status in Chromium',
  () => {
    it(
      'the list shows 25 sessions by recent activity and "More" the rest; search opens a hit; a long transcript loads earlier pages on demand',
      { timeout: 150_000 },
      async () => {
        const d = await fx.daemon({ extraConfig: await dashboardConfig() });
        const native = await d.connect();
        const titles = Array.from({ length: 27 }, (_, i) => `listed ${String(i + 1).padStart(2, '0')}`);
        const ids: string[] = [];
        for (const title of titles) {
          const { session_id } = await native.call<{ session_id: string }>('session.create', { title });
          ids.push(session_id);
        }
        // The fifth session is the one last active: it heads the list.
        await native.call('session.resume', { session_id: ids[4]! });
        await runTurn(native, ids[4]!, 'needle', 'a needle-quartz in the haystack');

        const { context, page } = await loggedIn(chromium.browser, d.url);
        await page.locator('.session-row').nth(24).waitFor();
        const first = await listedTitles(page);
        expect(first).toHaveLength(25);
        expect(first[0]).toBe('listed 05');
        const more = page.getByRole('button', { name: 'More' });
        await more.click();
        await page.locator('.session-row').nth(26).waitFor();
        const all = await listedTitles(page);
        expect(all).toHaveLength(27);
        expect(new Set(all)).toEqual(new Set(titles));
        expect(await more.isHidden()).toBe(true);

        // Search runs session.search over the stored messages; a hit opens its session.
        await page.getByLabel('Search').fill('needle-quartz');
        await page.getByRole('button', { name: 'Search' }).click();
        // One row per matching message (the question and the demo model's echo), all in that session.
        const hit = page.locator('.session-row.hit');
        await hit.first().waitFor();
        const hits = await hit.evaluateAll((rows) =>
          rows.map((r) => (r as unknown as { dataset: { session: string } }).dataset.session),
        );
        expect(new Set(hits)).toEqual(new Set([ids[4]]));
        expect(await hit.first().textContent()).toContain('needle-quartz');
        await hit.first().getByRole('link').click();
        await page.locator('.msg-user', { hasText: 'a needle-quartz in the haystack' }).waitFor();
        await page.getByRole('link', { name: 'Sessions' }).click();
        await page.getByLabel('Search').fill('no-such-word-anywhere');
        await page.getByRole('button', { name: 'Search' }).click();
        await page.getByText('Nothing matches "no-such-word-anywhere".').waitFor();

        // A 250-message session opens on its newest 100; earlier pages load on demand, in order.
        const { session_id: long } = await native.call<{ session_id: string }>('session.create', {
          title: 'a long one',
        });
        await seedTranscript(d.home, long, 250);
        await openSession(page, long);
        await page.locator('.msg', { hasText: 'stored message 249' }).waitFor();
        expect(await page.locator('.transcript .msg').count()).toBe(100);
        expect(await page.locator('.msg', { hasText: /^stored message 149\b/ }).count()).toBe(0);
        const earlier = page.getByRole('button', { name: 'Load earlier messages' });
        await earlier.click();
        await expect.poll(() => page.locator('.transcript .msg').count()).toBe(200);
        await earlier.click();
        await expect.poll(() => page.locator('.transcript .msg').count()).toBe(250);
        expect(await earlier.count()).toBe(0);
        const shown = await page.locator('.transcript .msg .md, .transcript .msg .text').allTextContents();
        expect(shown.map((t) => t.trim())).toEqual(
          Array.from({ length: 250 }, (_, i) => `stored message ${i}`),
        );
        await context.close();
      },
    );

    it(
      'a turn streams live: text and reasoning deltas show before it ends, reasoning dimmed, the tool call collapsible with its output',
      { timeout: 120_000 },
      async () => {
        // A demo model that waits between chunks, so the deltas reach the page one by one.
        const demo = (extra.demo = await startDemoModel({ latencyMs: 40 }));
        const d = (extra.daemon = await startDaemon({
          config: [
            'model:',
            `  base_url: ${demo.baseUrl}`,
            '  model: gatehouse-demo',
            await dashboardConfig(),
          ].join('\n'),
        }));
        const native = await d.connect();
        const sessionId = await createAttached(native, { cwd: tempDir(), title: 'streaming', yolo: true });
        const { context, page } = await loggedIn(chromium.browser, d.url);
        await openSession(page, sessionId);
        // Every state the live area passes through, as the page drew it.
        await page.evaluate(() => {
          type El = { textContent: string | null; querySelector(s: string): El | null };
          const g = globalThis as unknown as {
            document: El;
            MutationObserver: new (cb: () => void) => { observe(el: El, o: object): void };
            __live: { text: string[]; reasoning: string[] };
          };
          g.__live = { text: [], reasoning: [] };
          const live = g.document.querySelector('.live')!;
          new g.MutationObserver(() => {
            const text = live.querySelector('.streaming')?.textContent;
            const reasoning = live.querySelector('.reasoning')?.textContent;
            if (text) g.__live.text.push(text);
            if (reasoning) g.__live.reasoning.push(reasoning);
          }).observe(live, { childList: true, subtree: true, characterData: true });
        });

        const done = nextEvent(native, 'turn.complete', (e) => e.session_id === sessionId, 60_000);
        await send(page, 'think: run: echo streamed-output-42');
        await done;
        const answer = page.locator('.transcript .msg-assistant .md', { hasText: 'streamed-output-42' });
        await answer.waitFor();
        const final = (await answer.textContent())!.trim();
        const seen = await page.evaluate(
          () => (globalThis as unknown as { __live: { text: string[]; reasoning: string[] } }).__live,
        );
        // The answer was drawn piece by piece before it was complete.
        const partial = seen.text.filter((t) => t.trim().length > 0 && t.trim().length < final.length);
        expect(partial.length).toBeGreaterThan(1);
        for (const t of partial) expect(final.startsWith(t.trim().slice(0, 20))).toBe(true);
        const reasoning =
          'The user asked me to think about: run: echo streamed-output-42. I am a scripted stand-in, so I follow my script.';
        expect(seen.reasoning.some((r) => r.length > 0 && r.length < reasoning.length)).toBe(true);

        // Reasoning stays in the transcript, dimmed against the answer's text.
        const dimmed = page.locator('.transcript .msg-assistant .reasoning', { hasText: reasoning });
        await dimmed.waitFor();
        const opacity = await dimmed.evaluate(
          (el) =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { opacity: string } }).getComputedStyle(
              el,
            ).opacity,
        );
        expect(Number(opacity)).toBeLessThan(1);

        // The tool call is collapsed to one line; opening it shows its output.
        const call = page.locator('.transcript details.tool', { hasText: 'echo streamed-output-42' });
        const output = call.locator('.tool-output');
        expect(await call.evaluate((el) => (el as unknown as { open: boolean }).open)).toBe(false);
        expect(await output.isVisible()).toBe(false);
        await call.locator('summary').click();
        expect(await output.isVisible()).toBe(true);
        expect(await output.textContent()).toContain('streamed-output-42');
        await context.close();
      },
    );

    it(
      'a new session offers only what runtime.describe allows: its providers, their models and its toolsets',
      { timeout: 120_000 },
      async () => {
        // Two providers, both the test's demo model under different names and model lists.
        const demo = (extra.demo = await startDemoModel());
        const d = (extra.daemon = await startDaemon({
          config: [
            'providers:',
            '  local:',
            `    base_url: ${demo.baseUrl}`,
            '    models: [gatehouse-demo, local-large]',
            '  spare:',
            `    base_url: ${demo.baseUrl}`,
            '    models: [spare-small, spare-large]',
            'default_provider: local',
            await dashboardConfig(),
          ].join('\n'),
        }));
        const native = await d.connect();
        const contract = (
          await native.call<{ session_create: { toolsets: string[]; defaults: { toolsets: string[] } } }>(
            'runtime.describe',
            {},
          )
        ).session_create;
        const { context, page } = await loggedIn(chromium.browser, d.url);
        await page.getByRole('link', { name: 'New session' }).click();
        const options = (label: string) =>
          page.getByLabel(label, { exact: true }).locator('option').allTextContents();
        await page.getByLabel('Provider').waitFor();
        expect(await options('Provider')).toEqual(['local', 'spare']);
        expect(await page.getByLabel('Provider').inputValue()).toBe('local');
        expect(await options('Model')).toEqual(['gatehouse-demo', 'local-large']);
        const boxes = page.locator('fieldset input[type="checkbox"]');
        expect(
          await boxes.evaluateAll((els) => els.map((e) => (e as unknown as { value: string }).value)),
        ).toEqual(contract.toolsets);

        // Another provider offers its own models; the session is created with the choices made.
        await page.getByLabel('Provider').selectOption('spare');
        expect(await options('Model')).toEqual(['spare-small', 'spare-large']);
        await page.getByLabel('Model', { exact: true }).selectOption('spare-large');
        await page.getByLabel('Title').fill('chosen in the form');
        const dropped = contract.defaults.toolsets[0]!;
        await page.locator(`fieldset input[value="${dropped}"]`).uncheck();
        await page.getByRole('button', { name: 'Create' }).click();
        await page.waitForURL(/#\/s\//);
        const id = decodeURIComponent(page.url().split('#/s/')[1]!);
        const info = await native.call<{
          provider: string;
          model: string;
          toolsets: string[];
          source: string;
        }>('session.info', { session_id: id });
        expect(info).toMatchObject({ source: 'gui', provider: 'spare', model: 'spare-large' });
        expect(info.toolsets).not.toContain(dropped);
        await context.close();
      },
    );

    it(
      "the status page shows the gateway, the providers, the storage counters, the agent cache and today's cost",
      { timeout: 90_000 },
      async () => {
        const { d, native, sessionId: id } = await dashboardSession(fx, { title: 'counted' });
        await runTurn(native, id, 'c1', 'count me');
        const { context, page } = await loggedIn(chromium.browser, d.url);
        // The list shows each session's cost beside its tokens (the demo model has no price).
        await page.locator('p.meta', { hasText: 'cost unknown' }).first().waitFor();
        await page.getByRole('link', { name: 'Status' }).click();
        const facts = async (heading: string) => {
          const table = page.locator(`h2:text-is("${heading}") + dl.facts`);
          await table.waitFor();
          const keys = await table.locator('dt').allTextContents();
          const values = await table.locator('dd').allTextContents();
          return Object.fromEntries(keys.map((k, i) => [k, values[i]]));
        };
        expect(await facts('Gateway')).toMatchObject({
          model: 'gatehouse-demo (demo model: a scripted stand-in, not a real model)',
        });
        expect(await facts('Providers')).toEqual({ default: 'gatehouse-demo (default)' });
        expect(await facts('Storage')).toMatchObject({ writable: 'true' });
        const cache = await facts('Agent cache');
        expect(Number(cache['size'])).toBeGreaterThanOrEqual(1);
        expect(Object.keys(cache)).toEqual(
          expect.arrayContaining(['hits', 'misses', 'bytes', 'evictions.lru', 'evictions.ttl']),
        );
        // Today's turns per principal, provider and model (docs/cost.md).
        expect(await facts('Cost today (UTC)')).toEqual({
          'native:owner · default/gatehouse-demo': 'cost unknown · 1 turns',
        });
        await context.close();
      },
    );
  },
);
