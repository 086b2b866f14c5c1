/**
 * Markdown in the terminal chat (issue 31 item 11): what each kind of markup turns into, that the
 * same answer renders the same whether it arrives whole or one character at a time, and that
 * colours off keeps the markup that carries meaning.
 */
import { describe, expect, it } from 'vitest';
import {
  MarkdownStream,
  renderMarkdown,
  type MarkdownStyle,
} from '../../../src/surfaces/cli/chat/markdown.js';

/** Styles made visible as tags, so a test reads what was styled how. */
const TAGS: MarkdownStyle = {
  bold: (t) => `<b>${t}</b>`,
  dim: (t) => `<d>${t}</d>`,
  code: (t) => `<c>${t}</c>`,
};
const NO_COLOUR: MarkdownStyle = { bold: (t) => t, dim: (t) => t, code: (t) => `\`${t}\`` };

const ANSWER = [
  '# Plan',
  '',
  'Use **two** steps and `npm test`:',
  '',
  '- first',
  '  * nested',
  '1. numbered stays',
  '> quoted',
  '',
  '```ts',
  'const a = 2 * 3; // `x`',
  '',
  '```',
  '---',
  'a * b and an open `span',
].join('\n');

const FRAME_TOP = `<d>┌─ ts ${'─'.repeat(34)}</d>`;
const FRAME_BOTTOM = `<d>└${'─'.repeat(39)}</d>`;

describe('markdown in the terminal chat', () => {
  it('renders headings, lists, quotes, code blocks in a frame, inline code and bold', () => {
    expect(renderMarkdown(ANSWER, TAGS).split('\n')).toEqual([
      '<b>Plan</b>',
      '',
      'Use <b>two</b> steps and <c>npm test</c>:',
      '',
      '• first',
      '  • nested',
      '1. numbered stays',
      '<d>▏ </d>quoted',
      '',
      FRAME_TOP,
      '<d>│ </d>const a = 2 * 3; // `x`',
      '<d>│ </d>',
      FRAME_BOTTOM,
      `<d>${'─'.repeat(40)}</d>`,
      'a * b and an open `span',
    ]);
  });

  it('renders a streamed answer exactly as the whole one, holding back only what may be markup', () => {
    // (Without colours: styled one delta at a time, a heading's escape codes come per delta.)
    const stream = new MarkdownStream(NO_COLOUR);
    let out = '';
    for (const char of ANSWER) out += stream.feed(char);
    expect(out + stream.flush()).toBe(renderMarkdown(ANSWER, NO_COLOUR));

    // Plain words are written as they come; an open span waits for its end.
    const words = new MarkdownStream(TAGS);
    expect(words.feed('Hello wor')).toBe('Hello wor');
    expect(words.feed('ld `np')).toBe('ld ');
    expect(words.feed('m` ok')).toBe('<c>npm</c> ok');
    // Flushed (a tool starts): what was held is written as it was.
    expect(words.feed(' **hal')).toBe(' ');
    expect(words.flush()).toBe('**hal');
  });

  it('starts a new line after something else was written (a tool call between two parts of an answer)', () => {
    const stream = new MarkdownStream(TAGS);
    expect(stream.feed('Let me check')).toBe('Let me check');
    expect(stream.flush()).toBe('');
    stream.lineBroken(); // the chat wrote the tool call on lines of its own
    expect(stream.feed('## Result\n- ok\n')).toBe('<b>Result</b>\n• ok\n');
  });

  it('keeps the meaningful markup when colours are off', () => {
    expect(renderMarkdown('## Steps\n- run `ls`\n', NO_COLOUR)).toBe('Steps\n• run `ls`\n');
  });
});
