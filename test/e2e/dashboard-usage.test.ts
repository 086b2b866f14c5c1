/**
 * Issue 31 item 3 in real Chromium: the session page's meter shows how much of the context window
 * the next request fills, counted as the turn's own budget check counts it (the very request the
 * model received last, plus the answer it gave), and when the next compression is due; a turn
 * that the meter says is past the threshold does compress first. Each turn's tokens and cost and
 * the session's total are shown, priced by the configuration.
 */
import { describe, expect, it } from 'vitest';
import { countMessageTokens, countRequestTokens, countTextTokens } from '../../src/runtime/context/tokens.js';
import type { WireMessage } from '../../src/runtime/model/wire.js';
import { HAVE_CHROMIUM, screenshotPath, sessionInPage, useChromium } from './browser.js';
import { nextEvent } from './gateway-harness.js';
import { chatRequests, dashboardConfig, runTurn, useFixture } from './seed-fixture.js';

const fx = useFixture();
const chromium = useChromium();

const WINDOW = 6000;
/** $1,000 / $4,000 per million tokens: a turn's cost is plain to compute from its tokens. */
const PRICING = 'pricing:\n  default:\n    gatehouse-demo: {input_per_mtok: 1000, output_per_mtok: 4000}\n';

interface ContextView {
  window: number;
  threshold: number;
  compress_at: number;
  tokens: number;
  until_compression: number;
  compression_due: boolean;
}

const said = (text: string) => `Demo model (scripted stand-in): you said: ${text}`;
const grouped = (n: number) => n.toLocaleString('en-US');

describe.skipIf(!HAVE_CHROMIUM)('context and cost at a glance, in Chromium', () => {
  it(
    'meters the next request and when compression is due; tokens and cost per turn and session',
    {
      timeout: 120_000,
    },
    async () => {
      const config = `  context_window: ${WINDOW}\ncompression:\n  threshold: 0.5\n  tail_tokens: 200\n${PRICING}${await dashboardConfig()}`;
      const { native, sessionId, page } = await sessionInPage(
        fx,
        chromium.browser,
        { title: 'Garden plans' },
        config,
      );
      const contextOf = () => native.call<ContextView>('session.context', { session_id: sessionId });
      const meter = page.locator('.usage meter.context-meter');

      await runTurn(native, sessionId, 'u1', 'tomatoes');
      await page.locator('.transcript article.msg-assistant').first().waitFor();
      // The count is the request the model received, with the answer it gave appended.
      const asked = chatRequests(fx.demo).at(-1)!;
      const expected =
        countRequestTokens(asked.messages as WireMessage[], asked.tools ?? []) +
        countMessageTokens({ role: 'assistant', content: said('tomatoes') });
      const first = await contextOf();
      expect(first).toMatchObject({
        window: WINDOW,
        threshold: 0.5,
        compress_at: WINDOW / 2,
        tokens: expected,
        until_compression: WINDOW / 2 - expected,
        compression_due: false,
      });
      await page.locator(`.usage meter[data-tokens="${expected}"]`).waitFor();
      // The test's tsconfig has no DOM types: the meter's properties are read by name.
      type MeterProps = { max: number; high: number; value: number };
      expect(
        await meter.evaluate((m) => {
          const { max, high, value } = m as unknown as MeterProps;
          return [max, high, value];
        }),
      ).toEqual([WINDOW, WINDOW / 2, expected]);
      expect(await page.locator('.usage .context-text').textContent()).toBe(
        `${grouped(expected)} of ${grouped(WINDOW)} tokens (${Math.round((expected / WINDOW) * 100)}%) · ` +
          `compression at ${grouped(WINDOW / 2)} (50%): ${grouped(WINDOW / 2 - expected)} tokens to go`,
      );

      // A message that fits under the threshold, echoed by the model: with the answer the transcript
      // is past it, so the meter says the next turn compresses first.
      const room = ((WINDOW / 2 - expected) * 3) / 4;
      const sample = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
      const words = Math.floor(room / (countTextTokens(sample) / 200));
      const long = Array.from({ length: words }, (_, i) => `w${i}`).join(' ');
      await runTurn(native, sessionId, 'u2', long);
      const second = await contextOf();
      // That turn itself did not compress: its request was under the threshold.
      expect(await native.call('session.lineage', { session_id: sessionId })).toMatchObject({ steps: [] });
      expect(second.compression_due).toBe(true);
      expect(second.tokens).toBeGreaterThan(WINDOW / 2);
      await page.locator(`.usage meter[data-tokens="${second.tokens}"]`).waitFor();
      expect(await page.locator('.usage .context-text').textContent()).toMatch(
        /past compression at 3,000 \(50%\): the next turn compresses first$/,
      );
      expect(await page.locator('.usage .context-text').getAttribute('class')).toContain('due');

      // Per turn and per session: tokens as the turns recorded them, priced by the configuration.
      const { turns } = await native.call<{
        turns: { admission_id: string; tokens: { input: number; output: number }; cost: { usd: number } }[];
      }>('session.turns', { session_id: sessionId });
      expect(turns).toHaveLength(2);
      await page.getByText('Per turn (the newest 2)').click();
      for (const turn of turns) {
        expect(turn.cost.usd).toBeCloseTo((turn.tokens.input * 1000 + turn.tokens.output * 4000) / 1e6, 10);
        const cells = await page
          .locator(`.usage tr[data-admission="${turn.admission_id}"] td`)
          .allTextContents();
        expect(cells.slice(2)).toEqual([
          grouped(turn.tokens.input),
          grouped(turn.tokens.output),
          `~$${turn.cost.usd.toFixed(4)} (estimated)`,
        ]);
      }
      const input = turns.reduce((sum, t) => sum + t.tokens.input, 0);
      const output = turns.reduce((sum, t) => sum + t.tokens.output, 0);
      const usd = turns.reduce((sum, t) => sum + t.cost.usd, 0);
      expect(await page.locator('.usage .session-usage').textContent()).toBe(
        `This session: ${grouped(input + output)} tokens (${grouped(input)} in, 0 cached, ${grouped(output)} out) · ~$${usd.toFixed(4)} (estimated)`,
      );
      await page.screenshot({ path: screenshotPath('dashboard-context.png') });

      // The meter was right: the next turn compresses before its model call, and the meter drops.
      const compressed = nextEvent(native, 'session.compressed', (e) => e.session_id === sessionId);
      await runTurn(native, sessionId, 'u3', 'beans');
      await compressed;
      expect(await native.call('session.lineage', { session_id: sessionId })).toMatchObject({
        steps: [{ kind: 'compression' }],
      });
      const third = await contextOf();
      expect(third.compression_due).toBe(false);
      expect(third.tokens).toBeLessThan(second.tokens);
      await page.locator(`.usage meter[data-tokens="${third.tokens}"]`).waitFor();
    },
  );
});
