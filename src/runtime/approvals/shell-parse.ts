/**
 * A small, forgiving reader of bash command lines, just deep enough for the danger detector: it splits
 * a line into pipelines of simple commands (words + redirections) and lifts out every command
 * substitution (`$( )`, backticks, `<( )`, `>( )`) so the detector can check each part on its own.
 *
 * It is not a shell. Anything it does not understand stays a plain word; it never throws. The
 * detector errs on the side of asking, so a misread line costs at most one extra approval prompt.
 */

export interface Redirect {
  /** The operator without its fd prefix: `>`, `>>`, `>|`, `&>`, `&>>`, `<`, `<<`, `<>` … */
  op: string;
  target: string;
}

export interface SimpleCommand {
  words: string[];
  redirects: Redirect[];
  /** Bodies of substitutions that appear in this command's words or redirect targets. */
  substitutions: string[];
}

/** Commands joined by `|` or `|&`: the output of each feeds the next. */
export type Pipeline = SimpleCommand[];

export interface ParsedLine {
  pipelines: Pipeline[];
  /** Every substitution body found anywhere in the line, outermost first. */
  substitutions: string[];
}

type Token =
  | { kind: 'word'; text: string; subs: string[] }
  | { kind: 'redirect'; op: string; target: string; subs: string[] }
  | { kind: 'op'; op: string };

const REDIRECT = /^(?:\d+|&)?(>>|>\||>&|>|<<<|<<-|<<|<>|<&|<)/;

/** Reads up to the matching close paren, honouring quotes; returns the index after it. */
function skipBalanced(src: string, start: number): number {
  let depth = 1;
  let i = start;
  while (i < src.length && depth > 0) {
    const c = src[i];
    if (c === '\\') i += 2;
    else if (c === "'") {
      const end = src.indexOf("'", i + 1);
      i = end < 0 ? src.length : end + 1;
    } else if (c === '"') {
      i = skipDoubleQuoted(src, i + 1);
    } else {
      if (c === '(') depth++;
      else if (c === ')') depth--;
      i++;
    }
  }
  return i;
}

function skipDoubleQuoted(src: string, start: number): number {
  let i = start;
  while (i < src.length && src[i] !== '"') i += src[i] === '\\' ? 2 : 1;
  return i + 1;
}

class Lexer {
  private i = 0;
  readonly tokens: Token[] = [];
  readonly substitutions: string[] = [];

  constructor(private readonly src: string) {}

  run(): void {
    const src = this.src;
    while (this.i < src.length) {
      const c = src[this.i] ?? '';
      const rest = src.slice(this.i);
      if (c === ' ' || c === '\t' || c === '\r') {
        this.i++;
      } else if (rest.startsWith('\\\n')) {
        this.i += 2;
      } else if (c === '#') {
        const nl = src.indexOf('\n', this.i);
        this.i = nl < 0 ? src.length : nl;
      } else if (/^(&&|\|\||\|&|;;|[;|&\n()])/.test(rest) && !/^&>/.test(rest)) {
        const op = /^(&&|\|\||\|&|;;|[;|&\n()])/.exec(rest)?.[1] ?? c;
        this.tokens.push({ kind: 'op', op });
        this.i += op.length;
      } else if (REDIRECT.test(rest) && !/^[<>]\(/.test(rest)) {
        this.readRedirect(rest);
      } else {
        const subs: string[] = [];
        const text = this.readWord(subs);
        this.tokens.push({ kind: 'word', text, subs });
      }
    }
  }

  private readRedirect(rest: string): void {
    const match = REDIRECT.exec(rest);
    const full = match?.[0] ?? '';
    let op = match?.[1] ?? '>';
    if (full.startsWith('&')) op = `&${op}`;
    this.i += full.length;
    while (this.src[this.i] === ' ' || this.src[this.i] === '\t') this.i++;
    const subs: string[] = [];
    const target = this.readWord(subs);
    // `>&2`, `2>&1`, `<&0`: duplicating a descriptor writes no file.
    if ((op === '>&' || op === '<&') && /^(\d+|-)$/.test(target)) return;
    if (op === '>&') op = '>';
    this.tokens.push({ kind: 'redirect', op, target, subs });
  }

  private record(body: string, subs: string[]): void {
    subs.push(body);
    this.substitutions.push(body);
  }

  /** One shell word: quotes removed, substitutions kept verbatim in the text and recorded. */
  private readWord(subs: string[]): string {
    const src = this.src;
    let out = '';
    while (this.i < src.length) {
      const c = src[this.i] ?? '';
      const rest = src.slice(this.i);
      if (/^[<>]\(/.test(rest) && out === '') {
        const end = skipBalanced(src, this.i + 2);
        this.record(src.slice(this.i + 2, end - 1), subs);
        out += src.slice(this.i, end);
        this.i = end;
      } else if (/[ \t\r\n;&|<>()]/.test(c)) {
        // Only what bash splits words on: any other space (a no-break space) is part of the word.
        break;
      } else if (c === '\\') {
        out += src[this.i + 1] ?? '';
        this.i += 2;
      } else if (c === "'") {
        const end = src.indexOf("'", this.i + 1);
        const stop = end < 0 ? src.length : end;
        out += src.slice(this.i + 1, stop);
        this.i = stop + 1;
      } else if (c === '"') {
        out += this.readDoubleQuoted(subs);
      } else if (rest.startsWith('$((')) {
        const end = skipBalanced(src, this.i + 3);
        out += src.slice(this.i, end + 1);
        this.i = end + 1;
      } else if (rest.startsWith('$(') || c === '`') {
        out += this.readSubstitution(subs);
      } else {
        out += c;
        this.i++;
      }
    }
    return out;
  }

  private readDoubleQuoted(subs: string[]): string {
    const src = this.src;
    let out = '';
    this.i++;
    while (this.i < src.length && src[this.i] !== '"') {
      const c = src[this.i] ?? '';
      if (c === '\\') {
        // As bash: inside double quotes a backslash escapes only $ ` " \ and a newline.
        const next = src[this.i + 1] ?? '';
        if (next !== '\n') out += next !== '' && '$`"\\'.includes(next) ? next : `\\${next}`;
        this.i += 2;
      } else if (src.startsWith('$(', this.i) || c === '`') {
        out += this.readSubstitution(subs);
      } else {
        out += c;
        this.i++;
      }
    }
    this.i++;
    return out;
  }

  private readSubstitution(subs: string[]): string {
    const src = this.src;
    const start = this.i;
    if (src[this.i] === '`') {
      const end = src.indexOf('`', this.i + 1);
      const stop = end < 0 ? src.length : end;
      this.record(src.slice(this.i + 1, stop), subs);
      this.i = stop + 1;
    } else {
      const end = skipBalanced(src, this.i + 2);
      this.record(src.slice(this.i + 2, end - 1), subs);
      this.i = end;
    }
    return src.slice(start, this.i);
  }
}

/** Splits a command line into pipelines of simple commands. Never throws. */
export function parseShell(line: string): ParsedLine {
  const lexer = new Lexer(line);
  lexer.run();
  const pipelines: Pipeline[] = [];
  let pipeline: Pipeline = [];
  let current: SimpleCommand = { words: [], redirects: [], substitutions: [] };
  const endCommand = (): void => {
    if (current.words.length > 0 || current.redirects.length > 0) pipeline.push(current);
    current = { words: [], redirects: [], substitutions: [] };
  };
  const endPipeline = (): void => {
    endCommand();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };
  for (const token of lexer.tokens) {
    if (token.kind === 'word') {
      current.words.push(token.text);
      current.substitutions.push(...token.subs);
    } else if (token.kind === 'redirect') {
      current.redirects.push({ op: token.op, target: token.target });
      current.substitutions.push(...token.subs);
    } else if (token.op === '|' || token.op === '|&' || token.op === '(' || token.op === ')') {
      // A subshell's parentheses only end the command: `(curl …) | sh` stays one pipeline.
      endCommand();
    } else {
      endPipeline();
    }
  }
  endPipeline();
  return { pipelines, substitutions: lexer.substitutions };
}
