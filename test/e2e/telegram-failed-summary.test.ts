/**
 * Issue 26 item 1 on a chat platform: the summariser answers a tool call instead of a summary, so a
 * compression inside a turn drops the oldest exchanges. The chat is told with the same words as
 * the local chat ("earlier messages dropped … (no summary could be made)"), and the child
 * transcript's row carries the lineage record a local session keeps in its receipt (method,
 * dropped, summary_error). Telegram stand-in, real daemon, both stores.
 */
import { describe, expect, it } from 'vitest';
import { BACKENDS } from './gateway-harness.js';
import { openSessionStore, storeRows } from './store-rows.js';
import { useTelegramDaemon } from './telegram-fixture.js';

const ANA = { id: 903, first_name: 'Ana' };

describe.each(BACKENDS)('a failed summary on Telegram (%s)', (backend) => {
  const tg = useTelegramDaemon({
    store: backend,
    yaml: ['  context_window: 2048', 'compression:', '  tail_tokens: 50'],
  });

  it('tells the chat the oldest messages were dropped, and records it in the lineage', async () => {
    const daemon = await tg.start();
    tg.model.answerSummaries('tool_call');
    const chat = { id: 903, type: 'private' as const };
    const padding = 'lorem ipsum dolor sit amet '.repeat(12);
    let notice: string | null = null;
    for (let n = 1; n <= 30 && notice === null; n++) {
      const answer = await tg.ask(chat, ANA, `turn ${n}: ${padding}`);
      if (answer.startsWith('(earlier messages')) {
        notice = answer;
        await tg.waitForText(chat.id, new RegExp(`you said: turn ${n}:`));
      } else expect(answer).toContain(`you said: turn ${n}:`);
    }
    expect(notice).toMatch(
      /^\(earlier messages dropped to fit the model's context window \(no summary could be made\): \d+ → \d+\)$/,
    );

    await tg.stop();
    const rows = await storeRows(daemon, backend);
    const children = await rows.all<{ session_id: string; parent_session_id: string }>(
      'SELECT session_id, parent_session_id FROM sessions WHERE parent_session_id IS NOT NULL',
    );
    await rows.close();
    expect(children.length).toBeGreaterThanOrEqual(1);
    const store = await openSessionStore(daemon, backend);
    try {
      const step = await store.compressionStepOf(children[0]!.session_id);
      expect(step?.method).toBe('dropped');
      expect(step?.summary_error).toMatch(/no text|tool/);
      expect(step!.dropped).toBeGreaterThan(0);
      // The parent is not a compression child: it has no record.
      expect(await store.compressionStepOf(children[0]!.parent_session_id)).toBeNull();
    } finally {
      await store.close();
    }
  });
});
