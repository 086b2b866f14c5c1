/**
 * Markdown as a terminal shows it (issue 31 item 11): headings in bold without their `#`, list items
 * with a bullet, block quotes behind a bar, code blocks in a frame with their language on top,
 * `inline code` and **bold** styled. It renders while the answer streams: a character is held
 * back only while it may still be markup (the start of a line until its kind is known, an open
 * `` ` `` or `**` until it closes or the line ends), so the text still appears as the model writes
 * it and nothing written is ever taken back. A span left open at the end of its line is shown as
 * it was written. Pure: text in, text out; the input has passed through `visible` already.
 *
 * Why no library: marked + marked-terminal (or markdown-it) render a whole document; a streamed
 * answer would have to be held back whole, or drawn again on every delta (docs/decisions.md).
 */

/** How the chat styles what it renders (colours off: the markup that carries meaning is kept). */
export interface MarkdownStyle {
  bold: (text: string) => string;
  dim: (text: string) => string;
  code: (text: string) => string;
}

/** Bold, dim and cyan inline code on a terminal that wants colour. */
export const ANSI_MARKDOWN: MarkdownStyle = {
  bold: (t) => (t === '' ? t : `\u001b[1m${t}\u001b[22m`),
  dim: (t) => (t === '' ? t : `\u001b[2m${t}\u001b[22m`),
  code: (t) => `\u001b[36m${t}\u001b[39m`,
};
/** NO_COLOR on a terminal: the structure stays, inline code keeps its backticks. */
export const PLAIN_MARKDOWN: MarkdownStyle = { bold: (t) => t, dim: (t) => t, code: (t) => `\`${t}\`` };

/** How wide a code block's frame is drawn (its lines are never cut). */
const FRAME = 40;
/** Characters a line may start with while it may still be markup (`#`, `-`, `>`, `1.`, a fence). */
const MARKUP_START = /^[\s#*+\->`~\d.]*$/;
const FENCE = /^\s*(`{3,}|~{3,})\s*([^`\s]*)\s*$/;

type LineKind =
  | { kind: 'pending' } // the start of a line, its kind not known yet
  | { kind: 'text'; style: (text: string) => string } // a paragraph, list item, quote or heading body
  | { kind: 'code' }; // a line inside a fenced block

export class MarkdownStream {
  /** The open fence (its marker), or null outside a code block. */
  private fence: string | null = null;
  private line: LineKind = { kind: 'pending' };
  /** Held back: the start of a line, or an inline span not closed yet. */
  private held = '';

  constructor(private readonly style: MarkdownStyle) {}

  /** Text of the current line waiting for its line's style (styled in one piece, not per character). */
  private run = '';

  /** Renders a piece of the answer; returns what may be written now. */
  feed(text: string): string {
    let out = '';
    for (const char of text) out += this.take(char);
    return out + this.styledRun();
  }

  /** The line's plain text gathered so far, in the line's style. */
  private styledRun(): string {
    const run = this.run;
    this.run = '';
    if (run === '') return '';
    return this.line.kind === 'text' ? this.line.style(run) : run;
  }

  /** The answer ended (or something else is written next): whatever was held, as it was written. */
  flush(): string {
    const held = this.held;
    this.held = '';
    if (this.line.kind !== 'pending') return this.styledRun() + held;
    if (held === '') return '';
    // An unfinished line start stays that line: what follows it continues as plain text.
    if (this.fence !== null) {
      this.line = { kind: 'code' };
      return `${this.style.dim('│ ')}${held}`;
    }
    this.line = { kind: 'text', style: (t) => t };
    return held;
  }

  /**
   * Something else was written, on lines of its own (a tool call, a notice): the answer goes on at
   * the start of a line, so its next line may be a heading or a list again. Call after flush().
   */
  lineBroken(): void {
    this.line = { kind: 'pending' };
  }

  /** The stream starts over (a new turn): no open block carries over. */
  reset(): void {
    this.fence = null;
    this.line = { kind: 'pending' };
    this.held = '';
  }

  private take(char: string): string {
    if (char === '\n') return this.endLine();
    if (this.line.kind === 'pending') {
      this.held += char;
      return this.decide(false);
    }
    if (this.line.kind === 'code') return char;
    return this.inline(char);
  }

  /** A line start: decided once a character rules markup out (or the line ends). */
  private decide(atEnd: boolean): string {
    const start = this.held;
    if (this.fence !== null) {
      const closing = FENCE.exec(start);
      if (atEnd && closing && closing[1]!.startsWith(this.fence) && closing[2] === '') {
        this.fence = null;
        this.held = '';
        return this.style.dim(`└${'─'.repeat(FRAME - 1)}`);
      }
      if (!atEnd && /^\s*[`~]*$/.test(start)) return '';
      this.held = '';
      this.line = { kind: 'code' };
      return `${this.style.dim('│ ')}${start}`;
    }
    // A fence line is known whole only at its end (its language follows the marker).
    if (!atEnd && (MARKUP_START.test(start) || /^\s*(`{3,}|~{3,})/.test(start))) return '';
    this.held = '';
    const fence = atEnd ? FENCE.exec(start) : null;
    if (fence) {
      this.fence = fence[1]!;
      const label = fence[2] ? `─ ${fence[2]} ` : '';
      return this.style.dim(`┌${label}${'─'.repeat(Math.max(3, FRAME - 1 - label.length))}`);
    }
    if (atEnd && /^\s*([-*_])(\s*\1){2,}\s*$/.test(start)) return this.style.dim('─'.repeat(FRAME));
    const heading = /^(#{1,6})\s+(.*)$/.exec(start);
    if (heading) return this.begin(this.style.bold, '', heading[2]!);
    const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(start);
    if (bullet) return this.begin((t) => t, `${bullet[1]}• `, bullet[2]!);
    const quote = /^\s*>\s?(.*)$/.exec(start);
    if (quote) return this.begin((t) => t, this.style.dim('▏ '), quote[1]!);
    return this.begin((t) => t, '', start);
  }

  private begin(style: (text: string) => string, head: string, rest: string): string {
    this.line = { kind: 'text', style };
    let out = head;
    for (const char of rest) out += this.inline(char);
    return out;
  }

  /** One character of a line's text: inline code and bold are held until they close. */
  private inline(char: string): string {
    const lineStyle = this.line.kind === 'text' ? this.line.style : (t: string) => t;
    const held = this.held + char;
    if (held.startsWith('`')) {
      if (held.length > 1 && char === '`') {
        this.held = '';
        if (held === '``') return this.plain(held);
        return this.styledRun() + this.style.code(held.slice(1, -1));
      }
      this.held = held;
      return '';
    }
    if (held === '*') {
      this.held = held;
      return '';
    }
    if (held.startsWith('**')) {
      if (held.length > 4 && held.endsWith('**')) {
        this.held = '';
        return this.styledRun() + this.style.bold(lineStyle(held.slice(2, -2)));
      }
      this.held = held;
      return '';
    }
    // A lone `*` (an emphasis or a multiplication): written as it is.
    this.held = '';
    return this.plain(held);
  }

  /** Plain text of the line: gathered, to be styled with the line in one piece. */
  private plain(text: string): string {
    this.run += text;
    return '';
  }

  private endLine(): string {
    let out = this.line.kind === 'pending' ? this.decide(true) : '';
    out += this.styledRun() + this.held; // an inline span left open: as it was written
    this.held = '';
    this.line = { kind: 'pending' };
    return `${out}\n`;
  }
}

/** A whole text (a stored answer, or one that was not streamed) as the terminal shows it. */
export function renderMarkdown(text: string, style: MarkdownStyle): string {
  const stream = new MarkdownStream(style);
  return stream.feed(text) + stream.flush();
}
