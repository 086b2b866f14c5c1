/**
 * The dashboard (issue 13): the gzipped size of its JS and CSS; time to first render of a session
 * with 10 messages against one with 10,000 (same run, headless Chromium; aim <= 2x); and the
 * latency of a streamed answer from the daemon to the page's DOM against a bare WebSocket client
 * of the same session in the same run.
 */
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { hashPassword } from '../src/domain/auth/password.js';
import { homeLayout } from '../src/daemon/home.js';
import { SqliteSessionStore } from '../src/storage/sqlite/session-store.js';
import { dashboardAssets } from '../src/surfaces/dashboard/assets.js';
import { CHROMIUM, HAVE_CHROMIUM, launchChromium } from '../test/fixtures/chromium.js';
import { startBenchDaemon } from './gateway-daemon.js';
import { figure, percentile, type Bench, type BenchFigure } from './lib.js';

const BENCH = 'dashboard';
const PASSWORD = 'bench password';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

async function openedMs(page: Page, url: string, sessionId: string, lastText: string): Promise<number> {
  await page.goto('about:blank');
  const start = performance.now();
  await page.goto(`${url}/#/s/${encodeURIComponent(sessionId)}`);
  await page.locator('.msg', { hasText: lastText }).last().waitFor();
  return performance.now() - start;
}

type Doc = { querySelectorAll(selector: string): ArrayLike<{ textContent: string | null }> };

/** Runs in the page (the bench is type-checked without the DOM library): when `text` is shown. */
function domHas(text: string): number | false {
  const doc = (globalThis as unknown as { document: Doc }).document;
  const hit = Array.from(doc.querySelectorAll('.msg-assistant')).some((el) => el.textContent?.includes(text));
  return hit ? performance.timeOrigin + performance.now() : false;
}

const bench: Bench = {
  name: BENCH,
  async run({ quick }) {
    const figures: BenchFigure[] = [];
    const assets = dashboardAssets(path.join(root, 'dist/dashboard'));
    const files = assets.paths.filter((p) => p.endsWith('.js') || p.endsWith('.css')).length;
    figures.push(
      figure({
        bench: BENCH,
        name: 'page JS+CSS gzipped',
        value: assets.gzippedScriptAndStyleBytes / 1024,
        unit: 'KiB',
        higherIsBetter: false,
        extra: { files },
      }),
    );
    if (!HAVE_CHROMIUM) {
      process.stderr.write(`${CHROMIUM} is missing: the dashboard's browser figures are skipped\n`);
      return figures;
    }

    const hash = await hashPassword(PASSWORD, { N: 1 << 10, r: 8, p: 1 });
    const daemon = await startBenchDaemon(`dashboard:\n  password_hash: ${JSON.stringify(hash)}\n`);
    const browser = await launchChromium();
    try {
      const native = await daemon.connect();
      const create = async (n: number) => {
        const { session_id } = await native.call<{ session_id: string }>('session.create', {
          title: `${n} messages`,
        });
        const store = SqliteSessionStore.open(homeLayout(daemon.home).stateDb('default'));
        await store.appendToTranscript(
          session_id,
          Array.from({ length: n }, (_, i) => ({
            role: i % 2 === 0 ? ('user' as const) : ('assistant' as const),
            content: `message ${i} with **some** markdown and \`code\``,
          })),
        );
        await store.close();
        return session_id;
      };
      const small = await create(10);
      const large = await create(10_000);

      const context = await browser.newContext();
      const page = await context.newPage();
      await page.goto(`${daemon.url}/`);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Log in' }).click();
      await page.waitForSelector('#link-state[data-state="open"]');

      const rounds = quick ? 3 : 7;
      const smallMs: number[] = [];
      const largeMs: number[] = [];
      for (let i = 0; i < rounds; i++) {
        smallMs.push(await openedMs(page, daemon.url, small, 'message 9 '));
        largeMs.push(await openedMs(page, daemon.url, large, 'message 9999 '));
      }
      const median = (xs: number[]) =>
        percentile(
          [...xs].sort((a, b) => a - b),
          50,
        );
      figures.push(
        figure({
          bench: BENCH,
          name: 'first render, 10,000 messages',
          value: median(largeMs),
          unit: 'ms',
          baseline: { name: 'first render, 10 messages', value: median(smallMs) },
          higherIsBetter: false,
          aim: { op: '<=', ratio: 2 },
        }),
      );

      // Streamed answers: the page's DOM against a bare WebSocket viewer of the same session.
      await page.goto(`${daemon.url}/#/s/${encodeURIComponent(small)}`);
      await page.locator('.msg', { hasText: 'message 9 ' }).last().waitFor();
      await native.call('session.resume', { session_id: small });
      const pageMs: number[] = [];
      const wsMs: number[] = [];
      for (let i = 0; i < (quick ? 5 : 15); i++) {
        const text = `latency probe ${i}`;
        const heard = new Promise<number>((resolve) => {
          const off = native.onNotification((n) => {
            const p = n.params as { event?: { type: string; message?: { content?: string } } };
            if (p.event?.type === 'message.stored' && p.event.message?.content?.includes(text)) {
              off();
              resolve(performance.timeOrigin + performance.now());
            }
          });
        });
        const shown = page.waitForFunction(domHas, text, { polling: 'raf' });
        const sent = performance.timeOrigin + performance.now();
        await native.call('prompt.submit', { session_id: small, submission_id: `probe-${i}`, text });
        const [wsAt, domAt] = await Promise.all([heard, shown.then((h) => h.jsonValue() as Promise<number>)]);
        wsMs.push(wsAt - sent);
        pageMs.push(domAt - sent);
      }
      figures.push(
        figure({
          bench: BENCH,
          name: 'answer to page DOM (median)',
          value: median(pageMs),
          unit: 'ms',
          baseline: { name: 'answer to bare WebSocket viewer (median)', value: median(wsMs) },
          higherIsBetter: false,
        }),
      );
      await context.close();
    } finally {
      await browser.close();
      await daemon.close();
    }
    return figures;
  },
};

export default bench;
