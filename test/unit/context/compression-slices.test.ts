/**
 * A compression of a long transcript counts its tokens in slices (issue 32 aim 3): other work
 * (another session's turn, I/O, timers) runs while it counts, and the result is what one count
 * would give.
 */
import { expect, it } from 'vitest';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import { messageTokens } from '../../../src/runtime/context/budget.js';
import { prepareCompression } from '../../../src/runtime/context/prepare.js';
import { summaryPieces } from '../../../src/runtime/context/summary-prompt.js';
import { inProcessDemoModel } from '../../../src/runtime/demo/model.js';

/** 4,000 exchanges with 1 KB of tool output each: far more counting than one slice holds. */
function longTranscript(): TranscriptMessage[] {
  const out: TranscriptMessage[] = [];
  for (let i = 0; i < 4_000; i++) {
    out.push(
      { role: 'user', content: `step ${i}: build module m${i}` },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: `c${i}`, type: 'function', function: { name: 'terminal', arguments: '{"command":"make"}' } },
        ],
      },
      { role: 'tool', tool_call_id: `c${i}`, content: `compiled unit ${i} without warnings\n`.repeat(30) },
      { role: 'assistant', content: `Module m${i} built.` },
    );
  }
  return out;
}

it('lets the event loop run while it counts, with the same counts as one pass', async () => {
  const messages = longTranscript();
  const settings = { window: 32_000, threshold: 0.75, tailTokens: 2_000 };
  let turnsMeanwhile = 0;
  let counting = true;
  const otherWork = () => {
    if (!counting) return;
    turnsMeanwhile++;
    setImmediate(otherWork);
  };
  setImmediate(otherWork);
  const prepared = await prepareCompression({
    messages,
    model: inProcessDemoModel({ contextWindow: settings.window }),
    settings,
  });
  counting = false;
  expect(prepared.kind).toBe('ready');
  if (prepared.kind !== 'ready') return;
  expect(prepared.before).toEqual({
    messages: messages.length,
    tokens: messages.reduce((sum, m) => sum + messageTokens(m), 0),
  });
  // Far more turns of the loop than the handful a compression's awaits (one summary call) give.
  expect(turnsMeanwhile).toBeGreaterThan(20);
});

it('splits the middle into the same pieces however it is sliced', async () => {
  const middle = longTranscript().slice(0, 2_000);
  const pieces = await summaryPieces(middle, 4_000);
  expect(pieces.flat()).toEqual(middle);
  expect(pieces.length).toBeGreaterThan(1);
});
