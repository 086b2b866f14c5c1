/**
 * /compress on a chat platform (issue 11, SPEC LIN-1): the Telegram stand-in, the real daemon, the
 * demo model over HTTP. The next model request shows the kept head, the summary and the tail.
 */
import { describe, expect, it } from 'vitest';
import { SUMMARY_MARKER } from '../../src/runtime/context/compress.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const tg = useTelegramDaemon({ yaml: ['compression:', '  tail_tokens: 50'] });
const DM = { id: 901, type: 'private' as const };
const ANA = { id: 901, first_name: 'Ana' };

describe('LIN-1 /compress on Telegram', () => {
  it('says when there is nothing to compress, then compresses and the next turn sees summary + tail', async () => {
    await tg.start();
    expect(await tg.ask(DM, ANA, 'first: the goal is to ship src/app.ts')).toMatch(/you said/);
    expect(await tg.ask(DM, ANA, '/compress')).toMatch(/^Nothing was compressed: /);
    for (const n of [2, 3, 4])
      expect(await tg.ask(DM, ANA, `message ${n} about docs/notes.md`)).toMatch(/you said/);
    expect(await tg.ask(DM, ANA, '/compress')).toMatch(
      /^Compressed the conversation: earlier messages summarized: 8 → \d+ \(\d+ → \d+ tokens\)\.$/,
    );
    expect(await tg.ask(DM, ANA, 'after the compression')).toMatch(/you said: after the compression/);
    const request = tg.requestTexts('after the compression');
    expect(request).toContain('first: the goal is to ship src/app.ts');
    expect(request).toContain(SUMMARY_MARKER.slice(1, -1));
    expect(request).toContain('docs/notes.md');
    expect(tg.userMessages('after the compression').some((m) => m.startsWith('message 2'))).toBe(false);
  });

  it('issue 26 item 3: an automatic compression is told in the chat, before the reply', async () => {
    await tg.stop();
    tg.reconfigure(['  context_window: 2048', 'compression:', '  tail_tokens: 50']);
    await tg.start();
    const chat = { id: 902, type: 'private' as const };
    const padding = 'lorem ipsum dolor sit amet '.repeat(12);
    for (let n = 1; n <= 30; n++) {
      const answer = await tg.ask(chat, ANA, `turn ${n}: ${padding}`);
      if (answer.startsWith('(earlier messages')) {
        expect(answer).toMatch(/^\(earlier messages summarized: \d+ → \d+\)$/);
        expect(await tg.waitForText(chat.id, new RegExp(`you said: turn ${n}:`))).toContain(`turn ${n}:`);
        return;
      }
      expect(answer).toContain(`you said: turn ${n}:`);
    }
    throw new Error('no compression was announced in 30 turns');
  });
});
