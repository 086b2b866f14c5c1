/**
 * The screen tells the truth (issue 25, item 7): control characters in model, tool or stored text
 * are shown, never obeyed, in the chat's live events, its approval prompts and stored history.
 */
import { describe, expect, it } from 'vitest';
import { INITIAL_RENDER, renderEvent, renderHistory } from '../../../src/surfaces/cli/chat/render.js';
import { visible } from '../../../src/surfaces/cli/visible.js';

/** Erases the line, moves up and draws a fake, harmless prompt over the real one. */
const FAKE_PROMPT = '\u001b[2K\r\u001b[1AAllow `ls`? [o]nce';

/** Nothing a terminal would act on: no C0 but newline and tab, no C1, no bidi control. */
function inert(text: string): boolean {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return !/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/.test(text);
}

describe('visible', () => {
  it.each([
    ['\u001b[31mred', '␛[31mred'],
    ['bell\u0007', 'bell␇'],
    ['over\rwrite', 'over␍write'],
    ['line\r\nnext', 'line\nnext'],
    ['tab\tand\nnewline', 'tab\tand\nnewline'],
    ['del\u007f', 'del␡'],
    ['nul\u0000', 'nul␀'],
    ['\u009b2J', '⟨U+009B⟩2J'],
    ['\u0090osc', '⟨U+0090⟩osc'],
    ['abc\u202edcba', 'abc⟨U+202E⟩dcba'],
    ['\u2066isolate\u2069', '⟨U+2066⟩isolate⟨U+2069⟩'],
    ['plain text, ünïcödé and emoji 🚀', 'plain text, ünïcödé and emoji 🚀'],
  ])('%j → %j', (input, shown) => {
    expect(visible(input)).toBe(shown);
    expect(inert(visible(input))).toBe(true);
  });
});

describe('the chat neutralises what it did not write itself', () => {
  it('an approval prompt cannot be overdrawn by its command or reason', () => {
    const { text } = renderEvent(INITIAL_RENDER, {
      type: 'approval.request',
      command: `rm -rf victim # ${FAKE_PROMPT}`,
      reason: `deletes files recursively${FAKE_PROMPT}`,
      choices: ['once', 'session', 'always', 'deny'],
      scope: '"session" approves this exact command in /w, for this session',
    });
    expect(inert(text)).toBe(true);
    expect(text).toContain('rm -rf victim # ␛[2K␍␛[1AAllow `ls`? [o]nce');
    expect(text).toContain('"session" approves this exact command in /w, for this session');
  });

  it('streamed text, tool lines and results, and stored history', () => {
    const events = [
      { type: 'text.delta', text: `hello ${FAKE_PROMPT}` },
      { type: 'reasoning.delta', text: '\u001b]0;title\u0007' },
      { type: 'tool.start', name: 'terminal', arguments: JSON.stringify({ command: `echo ${FAKE_PROMPT}` }) },
      { type: 'tool.complete', summary: `exit 0 ${FAKE_PROMPT}` },
    ];
    let state = INITIAL_RENDER;
    for (const event of events) {
      const rendered = renderEvent(state, event);
      expect(inert(rendered.text)).toBe(true);
      state = rendered.state;
    }
    const history = renderHistory([
      { role: 'user', content: `hi ${FAKE_PROMPT}` },
      { role: 'assistant', content: `sure ${FAKE_PROMPT}`, reasoning: '\u009b2J' },
      { role: 'tool', content: `out ${FAKE_PROMPT}` },
    ]);
    expect(inert(history)).toBe(true);
    expect(history).toContain('sure ␛[2K␍␛[1AAllow');
  });
});
