/**
 * Search queries on PostgreSQL's full-text search, with the behaviour the SQLite store has (STO-4):
 *
 * - Text is split into words the way SQLite's unicode61 tokenizer does: runs of letters and digits,
 *   compared without case and without stemming (the `simple` configuration over text whose other
 *   characters became spaces, in the index and in the query alike).
 * - `plain`: every whitespace-separated term must appear; a term is the phrase of the words in it
 *   (`README.md` is `readme` followed by `md`), no character is special, a term with no letter or
 *   digit is dropped.
 * - `fts`: the FTS5 query syntax, translated to a tsquery — barewords, "phrases" (`""` is a quote),
 *   a trailing `*` for a prefix, AND / OR / NOT (NOT binds tightest, then AND, then OR; adjacent
 *   phrases are ANDed) and parentheses. What FTS5 refuses is refused (InvalidParamsError): a stray
 *   character such as `?`, a dangling operator, an unterminated phrase, an unknown column (`-rf`,
 *   `rf:` are column filters to FTS5: "no such column: rf"). NEAR and column filters are not
 *   offered on PostgreSQL and are refused the same way.
 *
 * Snippets are cut here, as FTS5 cuts them: matched words wrapped in `[` `]`, at most 16 words
 * around the first match, `…` where text was left out.
 */
import { InvalidParamsError } from '../../domain/errors.js';

/** What the index stores of a message's text: SQL applied to `content`. */
export const DOCUMENT_SQL = `to_tsvector('simple', regexp_replace(content, '[^[:alnum:]]+', ' ', 'g'))`;

export interface SearchTerm {
  word: string;
  prefix: boolean;
}

export interface TsQuery {
  /** The text for to_tsquery('simple', …). */
  text: string;
  /** The words a match holds (not those under NOT), for the snippet. */
  terms: SearchTerm[];
}

const WORD = /[\p{L}\p{N}]+/gu;

function words(text: string): string[] {
  return text.match(WORD) ?? [];
}

function phrase(tokens: readonly string[], prefix: boolean): string {
  const parts = tokens.map((t, i) => `'${t}'${prefix && i === tokens.length - 1 ? ':*' : ''}`);
  return parts.length === 1 ? parts[0]! : `(${parts.join(' <-> ')})`;
}

/** Plain words as a tsquery; null when no term holds a letter or digit. */
export function plainTsQuery(text: string): TsQuery | null {
  const phrases = text
    .split(/\s+/)
    .map(words)
    .filter((tokens) => tokens.length > 0);
  if (phrases.length === 0) return null;
  return {
    text: phrases.map((tokens) => phrase(tokens, false)).join(' & '),
    terms: phrases.flat().map((word) => ({ word, prefix: false })),
  };
}

type Token =
  | { kind: 'phrase'; tokens: string[]; prefix: boolean; text: string }
  | { kind: 'op'; op: 'AND' | 'OR' | 'NOT' }
  | { kind: '(' | ')' };

function refuse(query: string, why: string): never {
  throw new InvalidParamsError(
    `search query ${JSON.stringify(query)} is not valid FTS5 syntax (${why}); leave out syntax: "fts" to search for plain words`,
  );
}

/**
 * A column filter (`-name`, `name:`): FTS5 looks `name` up among the index's columns first, so an
 * unknown one is refused naming it; the one column (`content`) is a filter PostgreSQL does not offer.
 */
function refuseColumn(query: string, name: string): never {
  refuse(
    query,
    name.toLowerCase() === 'content' ? 'column filters are not supported' : `no such column: ${name}`,
  );
}

function lex(query: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const c = query[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '(' || c === ')') {
      out.push({ kind: c });
      i++;
    } else if (c === '"') {
      let text = '';
      i++;
      for (;;) {
        if (i >= query.length) refuse(query, 'unterminated string');
        if (query[i] === '"') {
          if (query[i + 1] === '"') {
            text += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        text += query[i++];
      }
      const prefix = query[i] === '*';
      if (prefix) i++;
      out.push({ kind: 'phrase', tokens: words(text), prefix, text });
    } else if (/[\p{L}\p{N}_]/u.test(c)) {
      const match = /^[\p{L}\p{N}_]+/u.exec(query.slice(i))![0];
      i += match.length;
      const prefix = query[i] === '*';
      if (prefix) i++;
      if (!prefix && /^\s*:/.test(query.slice(i))) refuseColumn(query, match);
      if (!prefix && (match === 'AND' || match === 'OR' || match === 'NOT'))
        out.push({ kind: 'op', op: match });
      else if (match === 'NEAR' && query.slice(i).trimStart().startsWith('('))
        refuse(query, 'NEAR is not supported');
      else out.push({ kind: 'phrase', tokens: words(match), prefix, text: match });
    } else if (c === '-') {
      const column = /^\s*(?:"([^"]*)"|([\p{L}\p{N}_]+))/u.exec(query.slice(i + 1));
      if (column) refuseColumn(query, column[1] ?? column[2]!);
      refuse(query, `syntax error near "${c}"`);
    } else {
      refuse(query, `syntax error near "${c}"`);
    }
  }
  return out;
}

/** An FTS5 query as a tsquery, or InvalidParamsError where FTS5 would refuse it. */
export function ftsTsQuery(query: string): TsQuery {
  const tokens = lex(query);
  const terms: SearchTerm[] = [];
  let at = 0;
  const peek = () => tokens[at];
  const isOp = (op: string) => {
    const t = peek();
    return t?.kind === 'op' && t.op === op;
  };

  function primary(negated: boolean): string {
    const t = tokens[at++];
    if (t === undefined) refuse(query, 'the query ends where a word was expected');
    if (t.kind === '(') {
      const inner = or(negated);
      if (tokens[at++]?.kind !== ')') refuse(query, 'unbalanced parentheses');
      return `(${inner})`;
    }
    if (t.kind !== 'phrase') refuse(query, `syntax error near "${t.kind === 'op' ? t.op : t.kind}"`);
    if (t.tokens.length === 0) refuse(query, `"${t.text}" holds no word`);
    if (!negated) {
      t.tokens.forEach((word, i) => terms.push({ word, prefix: t.prefix && i === t.tokens.length - 1 }));
    }
    return phrase(t.tokens, t.prefix);
  }
  function not(negated: boolean): string {
    let left = primary(negated);
    while (isOp('NOT')) {
      at++;
      left = `(${left} & !${primary(!negated)})`;
    }
    return left;
  }
  function and(negated: boolean): string {
    let left = not(negated);
    for (;;) {
      if (isOp('AND')) at++;
      else if (peek() === undefined || peek()!.kind === ')' || isOp('OR')) return left;
      left = `${left} & ${not(negated)}`;
    }
  }
  function or(negated: boolean): string {
    let left = and(negated);
    while (isOp('OR')) {
      at++;
      left = `${left} | ${and(negated)}`;
    }
    return left;
  }

  const text = or(false);
  if (at < tokens.length) refuse(query, 'unbalanced parentheses');
  return { text, terms };
}

const SNIPPET_WORDS = 16;

/** The text with matched words in `[` `]`: at most SNIPPET_WORDS words around the first match. */
export function snippet(content: string, terms: readonly SearchTerm[]): string {
  const found = [...content.matchAll(WORD)].map((m) => ({ start: m.index, end: m.index + m[0].length }));
  const matches = (word: string) => {
    const w = word.toLowerCase();
    return terms.some((t) => (t.prefix ? w.startsWith(t.word.toLowerCase()) : w === t.word.toLowerCase()));
  };
  const first = Math.max(
    0,
    found.findIndex((f) => matches(content.slice(f.start, f.end))),
  );
  const from = Math.max(0, Math.min(first - 2, found.length - SNIPPET_WORDS));
  const to = Math.min(found.length, from + SNIPPET_WORDS);
  if (found.length === 0) return content;
  let out = from > 0 ? '…' : '';
  let cursor = from > 0 ? found[from]!.start : 0;
  for (let i = from; i < to; i++) {
    const { start, end } = found[i]!;
    const word = content.slice(start, end);
    out += content.slice(cursor, start) + (matches(word) ? `[${word}]` : word);
    cursor = end;
  }
  out += to < found.length ? '…' : content.slice(cursor);
  return out;
}
