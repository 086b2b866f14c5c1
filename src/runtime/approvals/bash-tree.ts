/**
 * The structural reader of a command line for the allow-list (issue 25): bash's own grammar
 * (tree-sitter-bash, run by web-tree-sitter's WebAssembly runtime, loaded once and lazily).
 *
 * It returns the line as plain simple commands (literal words, quotes removed) joined by `;`, `&&`,
 * `||`, `|` and newlines, with their redirections, or says why the line is not that simple. Anything
 * whose text is only known when bash runs it is refused here: expansions of every kind ($x, $( ),
 * backticks, <( ), $(( )), $'…'), brace expansion, a leading `~`, assignments, compound commands
 * (subshells, loops, functions, `[[ ]]`), background jobs, heredocs, and any parse error. The caller
 * treats "not simple" as "ask a human".
 */
import { createRequire } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import type { Node as SyntaxNode, Parser as ParserType } from 'web-tree-sitter';
import { processChoseFlag } from '../v8-flags.js';

export interface TreeRedirect {
  /** `>`, `>>`, `<`, `&>`, `>&` … */
  op: string;
  /** The file or descriptor, quotes removed. */
  target: string;
  /** The descriptor written before the operator (`2` in `2>&1`), if any. */
  fd: string | null;
}

export interface TreeCommand {
  /** The program name, then its arguments, quotes removed. */
  words: string[];
  /** For each word: true when it holds unquoted glob characters (`*`, `?`, `[`). */
  globs: boolean[];
  redirects: TreeRedirect[];
}

export type TreeLine = { simple: true; commands: TreeCommand[] } | { simple: false; why: string };

let parser: Promise<ParserType> | null = null;

/** V8's flags that choose how WebAssembly is compiled: a process given one keeps its own choice. */
const WASM_TIER_FLAGS = [
  '--liftoff',
  '--no-liftoff',
  '--liftoff-only',
  '--wasm-tier-up',
  '--no-wasm-tier-up',
];

function webAssemblyBaselineOnly(): void {
  if (!processChoseFlag(WASM_TIER_FLAGS)) setFlagsFromString('--liftoff-only');
}

/**
 * Loads the runtime and the bash grammar once per process; later calls share the promise.
 *
 * The grammar is 1.3 MB of WebAssembly, and V8 compiles it twice by default: at once with its
 * baseline compiler (Liftoff), then again in the background with its optimizing one (TurboFan). That
 * second compile cost about a second of CPU in every process that loaded the grammar (each daemon
 * whose turns offer the terminal, each safe-mode worker), for a parser that reads one command line
 * at a time: measured at 65-100 µs a line with Liftoff's code, no slower than with TurboFan's. So
 * WebAssembly is compiled by Liftoff only, unless the process was given a flag of its own for it
 * (docs/decisions.md, "The bash grammar is compiled once"). The flag is read by V8 when it compiles,
 * like the start-up's held tiers (daemon/allocator.ts).
 */
function bashParser(): Promise<ParserType> {
  parser ??= (async () => {
    webAssemblyBaselineOnly();
    const { Parser, Language } = await import('web-tree-sitter');
    await Parser.init();
    const require = createRequire(import.meta.url);
    const bash = await Language.load(require.resolve('tree-sitter-bash/tree-sitter-bash.wasm'));
    const instance = new Parser();
    instance.setLanguage(bash);
    return instance;
  })();
  return parser;
}

/**
 * Starts loading the grammar now (a tool worker calls it at start, a daemon when a turn that offers
 * the terminal starts: the terminal tool's `prepare`), so the first command of a turn is not delayed
 * by it. A failure here is seen again, and reported, by the first read.
 */
export function preloadBashParser(): void {
  bashParser().catch(() => {
    parser = null;
  });
}

class NotSimple extends Error {}

function refuse(why: string): never {
  throw new NotSimple(why);
}

/** Node types that only join simple commands; their own tokens carry no meaning for us. */
const JOINERS = new Set(['program', 'list', 'pipeline', 'redirected_statement']);
const JOIN_TOKENS = new Set([';', '&&', '||', '|', '\n', ';;']);

const EXPANSIONS: Record<string, string> = {
  simple_expansion: 'a variable expansion',
  expansion: 'a variable expansion',
  command_substitution: 'a command substitution',
  process_substitution: 'a process substitution',
  arithmetic_expansion: 'an arithmetic expansion',
  ansi_c_string: "an ANSI-C string ($'…')",
  translated_string: 'a translated string ($"…")',
  brace_expression: 'a brace expansion',
  variable_assignment: 'a variable assignment',
  heredoc_redirect: 'a here-document',
  herestring_redirect: 'a here-string',
  subshell: 'a subshell',
  compound_statement: 'a command group ({ … })',
  negated_command: 'a negated command (!)',
  test_command: 'a test expression',
};

export async function readTree(line: string): Promise<TreeLine> {
  const tree = (await bashParser()).parse(line);
  if (tree === null) return { simple: false, why: 'the line could not be parsed' };
  try {
    const commands: TreeCommand[] = [];
    collect(tree.rootNode, commands);
    return { simple: true, commands };
  } catch (error) {
    if (error instanceof NotSimple) return { simple: false, why: error.message };
    throw error;
  } finally {
    tree.delete();
  }
}

function collect(node: SyntaxNode, out: TreeCommand[]): void {
  if (node.hasError) refuse('bash cannot parse it as written');
  if (node.type === 'comment') return;
  if (node.type === 'command') {
    out.push(readCommand(node));
    return;
  }
  if (!JOINERS.has(node.type))
    refuse(`it uses ${EXPANSIONS[node.type] ?? `a ${node.type.replace(/_/g, ' ')}`}`);
  const redirects: TreeRedirect[] = [];
  const before = out.length;
  for (const child of node.children) {
    if (child === null) continue;
    if (child.type === 'file_redirect') redirects.push(readRedirect(child));
    else if (child.type === '&') refuse('it starts a background job (&)');
    else if (JOIN_TOKENS.has(child.type)) continue;
    else collect(child, out);
  }
  if (redirects.length === 0) return;
  // A redirection after a pipeline applies to its last command, which is the only one bash gives it to.
  const last = out[out.length - 1];
  if (last === undefined || out.length === before) refuse('it redirects nothing but a file');
  last.redirects.push(...redirects);
}

function readCommand(node: SyntaxNode): TreeCommand {
  const words: string[] = [];
  const globs: boolean[] = [];
  const redirects: TreeRedirect[] = [];
  for (const child of node.children) {
    if (child === null) continue;
    if (child.type === 'file_redirect') redirects.push(readRedirect(child));
    else if (child.type === 'command_name') {
      const name = child.firstChild;
      if (name === null) refuse('it has no command name');
      const word = literal(name);
      if (word.glob) refuse('its command name is a glob pattern');
      words.push(word.text);
      globs.push(false);
    } else {
      const word = literal(child);
      words.push(word.text);
      globs.push(word.glob);
    }
  }
  return { words, globs, redirects };
}

function readRedirect(node: SyntaxNode): TreeRedirect {
  let fd: string | null = null;
  let op = '';
  let target: string | null = null;
  for (const child of node.children) {
    if (child === null) continue;
    if (child.type === 'file_descriptor') fd = child.text;
    else if (/^[<>&|]+$/.test(child.type)) op = child.type;
    else target = literal(child).text;
  }
  if (target === null || op === '') refuse('it has a redirection without a target');
  return { op, target, fd };
}

/** The value of a word bash will not change before running it, or a refusal. */
function literal(node: SyntaxNode): { text: string; glob: boolean } {
  switch (node.type) {
    case 'word':
    case 'number': {
      const text = node.text;
      if (/^~/.test(text)) refuse('it uses a ~ expansion');
      if (/(^|[^\\])[{}]/.test(text)) refuse('it uses a brace expansion');
      return { text: text.replace(/\\(.)/gs, '$1'), glob: /(^|[^\\])[*?[]/.test(text) };
    }
    case 'raw_string':
      return { text: node.text.slice(1, -1), glob: false };
    case 'string': {
      let text = '';
      for (const child of node.children) {
        if (child === null || child.type === '"') continue;
        if (child.type !== 'string_content')
          refuse(`it uses ${EXPANSIONS[child.type] ?? 'an expansion'} inside quotes`);
        text += child.text.replace(/\\\n/g, '').replace(/\\([$`"\\])/g, '$1');
      }
      return { text, glob: false };
    }
    case 'concatenation': {
      let text = '';
      let glob = false;
      for (const child of node.children) {
        if (child === null) continue;
        if (child.type === 'word' && /^[{}]$/.test(child.text)) refuse('it uses a brace expansion');
        const part = literal(child);
        text += part.text;
        glob ||= part.glob;
      }
      if (/^~/.test(node.text)) refuse('it uses a ~ expansion');
      return { text, glob };
    }
    default:
      return refuse(`it uses ${EXPANSIONS[node.type] ?? `a ${node.type.replace(/_/g, ' ')}`}`);
  }
}
