/**
 * The allow-list (issue 25): the only commands that run without asking in the default mode. Each
 * row is a read-only program with the options it may take, spelled out in full. An option not in
 * its row (an abbreviation such as `--recur` included, since the real program would accept it)
 * makes the command ask; so does an operand path outside the working directory.
 *
 * A row says nothing about danger: it is a proof of safety for the arguments it knows. Everything it
 * cannot prove safe is handed to a human with the detector's explanation.
 */
import { globOutside, pathOutside } from './inside-cwd.js';

/** What a row needs to judge one command. */
export interface ArgContext {
  cwd: string;
  /** Where relative paths resolve (an earlier `cd` on the line may have moved it). */
  dir: string;
  /** For each argument: does it hold unquoted glob characters? */
  globs: readonly boolean[];
}

interface Spec {
  /** Short option letters that take no value. */
  short?: string;
  /** Short option letters that take a value (`-n 5` or `-n5`). */
  valued?: string;
  /** Long options that take no value, without the leading `--`. */
  long?: readonly string[];
  /** Long options that take a value (`--x=v` or `--x v`). */
  longValued?: readonly string[];
  /** `-5` style counts (head, tail). */
  numeric?: boolean;
  /** What the operands are: paths to check, free text, or nothing. Default: paths. */
  operands?: 'paths' | 'text' | 'none';
  maxOperands?: number;
  /** A further check on the parsed options and operands; returns why not, or null. */
  check?: (parsed: Parsed, context: ArgContext) => string | null;
}

interface Parsed {
  options: { name: string; value: string | null }[];
  operands: { text: string; index: number }[];
}

/** Splits arguments by the row's option table; returns why not when an option is unknown. */
function parseArgs(args: readonly string[], spec: Spec): Parsed | string {
  const parsed: Parsed = { options: [], operands: [] };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--') {
      for (let j = i + 1; j < args.length; j++) parsed.operands.push({ text: args[j] ?? '', index: j });
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (spec.long?.includes(name) && eq < 0) parsed.options.push({ name: `--${name}`, value: null });
      else if (spec.longValued?.includes(name)) {
        const value = eq < 0 ? args[++i] : arg.slice(eq + 1);
        if (value === undefined) return `option --${name} has no value`;
        parsed.options.push({ name: `--${name}`, value });
      } else return `option --${name} is not known to be safe`;
      continue;
    }
    if (arg.startsWith('-') && arg !== '-') {
      if (spec.numeric === true && /^-\d+$/.test(arg)) {
        parsed.options.push({ name: '-n', value: arg.slice(1) });
        continue;
      }
      for (let k = 1; k < arg.length; k++) {
        const letter = arg[k] ?? '';
        if (spec.valued?.includes(letter)) {
          const value = k + 1 < arg.length ? arg.slice(k + 1) : args[++i];
          if (value === undefined) return `option -${letter} has no value`;
          parsed.options.push({ name: `-${letter}`, value });
          break;
        }
        if (!spec.short?.includes(letter)) return `option -${letter} is not known to be safe`;
        parsed.options.push({ name: `-${letter}`, value: null });
      }
      continue;
    }
    parsed.operands.push({ text: arg, index: i });
  }
  return parsed;
}

function checkPaths(texts: readonly { text: string; index: number }[], context: ArgContext): string | null {
  for (const { text, index } of texts) {
    const why =
      context.globs[index] === true
        ? globOutside(text, context.dir, context.cwd)
        : pathOutside(text, context.dir, context.cwd);
    if (why !== null) return why;
  }
  return null;
}

function has(parsed: Parsed, ...names: string[]): boolean {
  return parsed.options.some((o) => names.includes(o.name));
}

/** grep-like: the first operand is the pattern unless one was given as an option. */
function patternThenPaths(patternOptions: string[]) {
  return (parsed: Parsed, context: ArgContext): string | null => {
    const files = parsed.options.filter((o) => o.name === '-f' || o.name === '--file');
    const fileCheck = checkPaths(
      files.map((o) => ({ text: o.value ?? '', index: -1 })),
      context,
    );
    if (fileCheck !== null) return fileCheck;
    const paths = has(parsed, ...patternOptions) ? parsed.operands : parsed.operands.slice(1);
    return checkPaths(paths, context);
  };
}

const GIT_REV_OPTIONS = {
  long: [
    'oneline',
    'stat',
    'shortstat',
    'numstat',
    'name-only',
    'name-status',
    'graph',
    'decorate',
    'all',
    'patch',
    'reverse',
    'no-merges',
    'merges',
    'first-parent',
    'abbrev-commit',
    'follow',
    'no-color',
    'cached',
    'staged',
    'no-patch',
    'summary',
    'check',
    'exit-code',
    'quiet',
    'word-diff',
    'no-renames',
    'ignore-all-space',
    'ignore-space-change',
    'full-index',
    'minimal',
    'relative',
  ],
  longValued: [
    'format',
    'pretty',
    'since',
    'until',
    'after',
    'before',
    'author',
    'committer',
    'grep',
    'max-count',
    'date',
    'color',
    'abbrev',
    'diff-filter',
    'unified',
    'skip',
    'decorate-refs',
  ],
  short: 'pswbqi',
  valued: 'nU',
  numeric: true,
  operands: 'text' as const,
};

/** git operands are revisions or paths: anything path-like must stay inside the cwd. */
function gitOperands(parsed: Parsed, context: ArgContext): string | null {
  for (const { text, index } of parsed.operands) {
    if (text.includes(':')) continue; // `rev:path` names repository content, not a file on disk
    const looksLikePath = text.startsWith('/') || text.split('/').includes('..');
    const why =
      context.globs[index] === true
        ? globOutside(text, context.dir, context.cwd)
        : looksLikePath
          ? pathOutside(text, context.dir, context.cwd)
          : null;
    if (why !== null) return why;
  }
  return null;
}

const GIT: Record<string, Spec> = {
  status: {
    short: 'sbu',
    long: ['short', 'branch', 'porcelain', 'ignored', 'long', 'show-stash'],
    longValued: ['untracked-files'],
    check: gitOperands,
    operands: 'text',
  },
  log: { ...GIT_REV_OPTIONS, check: gitOperands },
  diff: { ...GIT_REV_OPTIONS, check: gitOperands },
  show: { ...GIT_REV_OPTIONS, check: gitOperands },
  branch: { short: 'arv', long: ['list', 'all', 'remotes', 'verbose', 'show-current'], operands: 'none' },
  'rev-parse': {
    long: ['show-toplevel', 'abbrev-ref', 'short', 'git-dir', 'is-inside-work-tree', 'verify'],
    operands: 'text',
    check: gitOperands,
  },
  'ls-files': {
    short: 'mocdz',
    long: ['others', 'cached', 'modified', 'deleted', 'exclude-standard'],
    check: gitOperands,
    operands: 'text',
  },
  remote: { short: 'v', long: ['verbose'], operands: 'none' },
};

const FIND_TESTS_VALUED = new Set([
  '-name',
  '-iname',
  '-path',
  '-ipath',
  '-type',
  '-maxdepth',
  '-mindepth',
  '-size',
  '-mtime',
  '-mmin',
  '-newer',
  '-regex',
  '-iregex',
  '-perm',
  '-user',
  '-group',
  '-wholename',
]);
const FIND_TESTS = new Set([
  '-print',
  '-print0',
  '-o',
  '-or',
  '-a',
  '-and',
  '-not',
  '!',
  '(',
  ')',
  '-empty',
  '-readable',
  '-prune',
  '-true',
  '-false',
]);

/** find: start paths, then an expression made only of tests (no action but -print). */
function findArgs(args: readonly string[], context: ArgContext): string | null {
  let i = 0;
  const starts: { text: string; index: number }[] = [];
  for (; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg.startsWith('-') || arg === '!' || arg === '(') break;
    starts.push({ text: arg, index: i });
  }
  const outside = checkPaths(starts, context);
  if (outside !== null) return outside;
  for (; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (FIND_TESTS.has(arg)) continue;
    if (!FIND_TESTS_VALUED.has(arg)) return `find ${arg} is not known to be safe`;
    const value = args[++i];
    if (value === undefined) return `find ${arg} has no value`;
    if (arg === '-newer') {
      const why = pathOutside(value, context.dir, context.cwd);
      if (why !== null) return why;
    }
  }
  return null;
}

/** sed: printing lines and plain substitutions only (no `w`, `e`, `r` commands or flags). */
function sedArgs(parsed: Parsed, context: ArgContext): string | null {
  const [script, ...files] = parsed.operands;
  if (script === undefined) return 'sed without a script';
  const printRange = /^(\d+|\$)(,(\d+|\$))?p$/;
  const substitute = /^s\/([^/\\\n]|\\.)*\/([^/\\\n]|\\.)*\/[gpI0-9]*$/;
  if (!printRange.test(script.text) && !substitute.test(script.text))
    return 'the sed script is not known to be safe';
  return checkPaths(files, context);
}

/** awk: a program that neither runs commands, writes files nor reads the environment. */
function awkArgs(parsed: Parsed, context: ArgContext): string | null {
  const [program, ...files] = parsed.operands;
  if (program === undefined) return 'awk without a program';
  if (/system|getline|ENVIRON|PROCINFO|[|>]|close|fflush|@/.test(program.text))
    return 'the awk program may run commands, write files or read the environment';
  if (files.some((f) => f.text.includes('='))) return 'awk variable assignments are not known to be safe';
  if (parsed.options.some((o) => o.name === '-v' && /[`$]/.test(o.value ?? '')))
    return 'an awk -v value is not known to be safe';
  return checkPaths(files, context);
}

export const ALLOW_LIST: Record<string, Spec> = {
  ls: {
    short: 'aAlhtrSR1dFisGnogpQUvX',
    long: [
      'all',
      'almost-all',
      'human-readable',
      'reverse',
      'recursive',
      'directory',
      'classify',
      'inode',
      'size',
      'numeric-uid-gid',
      'no-group',
      'literal',
    ],
    longValued: ['color', 'sort', 'time-style', 'format'],
  },
  cat: { short: 'nAbsvETet' },
  head: {
    valued: 'nc',
    short: 'qv',
    numeric: true,
    longValued: ['lines', 'bytes'],
    long: ['quiet', 'verbose'],
  },
  tail: {
    valued: 'nc',
    short: 'qv',
    numeric: true,
    longValued: ['lines', 'bytes'],
    long: ['quiet', 'verbose'],
  },
  wc: { short: 'lwcmL', long: ['lines', 'words', 'bytes', 'chars', 'max-line-length'] },
  grep: {
    short: 'ivnclLwxEFGPosqhHrZUz',
    valued: 'ABCmef',
    long: [
      'ignore-case',
      'invert-match',
      'line-number',
      'count',
      'files-with-matches',
      'files-without-match',
      'word-regexp',
      'line-regexp',
      'extended-regexp',
      'fixed-strings',
      'perl-regexp',
      'only-matching',
      'no-messages',
      'quiet',
      'silent',
      'no-filename',
      'with-filename',
      'recursive',
      'null',
      'binary',
      'text',
    ],
    longValued: [
      'include',
      'exclude',
      'exclude-dir',
      'color',
      'colour',
      'max-count',
      'regexp',
      'file',
      'context',
      'after-context',
      'before-context',
    ],
    check: patternThenPaths(['-e', '--regexp', '-f', '--file']),
  },
  rg: {
    short: 'iSsnNlcwvFoqHIuU.',
    valued: 'egtTABCmM',
    long: [
      'ignore-case',
      'smart-case',
      'case-sensitive',
      'line-number',
      'no-line-number',
      'files-with-matches',
      'count',
      'word-regexp',
      'invert-match',
      'fixed-strings',
      'only-matching',
      'quiet',
      'hidden',
      'no-ignore',
      'files',
      'no-heading',
      'heading',
      'with-filename',
      'no-filename',
      'json',
      'vimgrep',
      'multiline',
    ],
    longValued: [
      'glob',
      'type',
      'type-not',
      'regexp',
      'max-count',
      'context',
      'after-context',
      'before-context',
      'color',
      'max-columns',
      'max-depth',
      'sort',
    ],
    check: patternThenPaths(['-e', '--regexp']),
  },
  sort: {
    short: 'nrufbhVsMgcCdi',
    valued: 'kt',
    long: [
      'numeric-sort',
      'reverse',
      'unique',
      'ignore-case',
      'human-numeric-sort',
      'version-sort',
      'stable',
      'check',
    ],
    longValued: ['key', 'field-separator'],
  },
  uniq: {
    short: 'cduiz',
    valued: 'fsw',
    long: ['count', 'repeated', 'unique', 'ignore-case'],
    maxOperands: 1,
  },
  cut: {
    valued: 'dfcb',
    short: 's',
    long: ['only-delimited', 'complement'],
    longValued: ['delimiter', 'fields', 'characters', 'bytes', 'output-delimiter'],
  },
  tr: { short: 'dscC', long: ['delete', 'squeeze-repeats', 'complement'], operands: 'text', maxOperands: 2 },
  diff: {
    short: 'uqrNywbBiat',
    valued: 'U',
    long: [
      'unified',
      'brief',
      'recursive',
      'side-by-side',
      'ignore-all-space',
      'ignore-space-change',
      'ignore-blank-lines',
      'ignore-case',
      'text',
      'new-file',
    ],
    longValued: ['color', 'label'],
    maxOperands: 2,
  },
  stat: {
    short: 'Ltf',
    valued: 'c',
    longValued: ['format', 'printf'],
    long: ['dereference', 'terse', 'file-system'],
  },
  file: { short: 'biL', long: ['brief', 'mime', 'mime-type', 'dereference'] },
  du: {
    short: 'shacbkmxL',
    valued: 'd',
    long: ['summarize', 'human-readable', 'all', 'total', 'apparent-size'],
    longValued: ['max-depth'],
  },
  df: { short: 'hTikPl', long: ['human-readable', 'print-type', 'inodes', 'local'] },
  pwd: { short: 'LP', operands: 'none' },
  echo: { short: 'neE', operands: 'text' },
  printf: { operands: 'text' },
  which: { short: 'a', operands: 'text' },
  date: {
    short: 'uR',
    valued: 'd',
    long: ['utc', 'rfc-email'],
    longValued: ['date', 'iso-8601', 'rfc-3339'],
    operands: 'text',
    check: (parsed) =>
      parsed.operands.some((o) => !o.text.startsWith('+'))
        ? 'date with an operand other than +FORMAT sets the clock'
        : null,
  },
  true: { operands: 'text' },
  false: { operands: 'text' },
  basename: { short: 'az', valued: 's', operands: 'text' },
  dirname: { operands: 'text' },
  realpath: { short: 'esq', long: ['relative-base'] },
  uname: { short: 'asnrvmpio', operands: 'none' },
  whoami: { operands: 'none' },
  seq: { short: 'w', valued: 'sf', operands: 'text' },
  sleep: {
    operands: 'text',
    check: (parsed) =>
      parsed.operands.every((o) => /^\d+(\.\d+)?[smhd]?$/.test(o.text)) ? null : 'sleep takes durations only',
  },
  nl: { short: 'ba', valued: 'w' },
  md5sum: { short: 'bt' },
  sha1sum: { short: 'bt' },
  sha256sum: { short: 'bt' },
  cmp: { short: 'sl', maxOperands: 2 },
  comm: { short: '123', maxOperands: 2 },
  tac: {},
  rev: {},
  column: { short: 't', valued: 's' },
  tree: { short: 'adfhL', valued: 'LI' },
  cd: { maxOperands: 1 },
  sed: { short: 'nEr', long: ['quiet', 'regexp-extended'], operands: 'text', check: sedArgs },
  awk: { valued: 'F', operands: 'text', check: awkArgs },
};

/**
 * null when `words` (program first) is on the allow-list with arguments it understands;
 * otherwise why not, in words a human reads.
 */
export function allowListed(words: readonly string[], context: ArgContext): string | null {
  const [name, ...args] = words;
  if (name === undefined) return 'there is no command';
  if (name.includes('/')) return `${name} is run by path, not by name`;
  const argContext: ArgContext = { ...context, globs: context.globs.slice(1) };
  if (name === 'find') return findArgs(args, argContext);
  if (name === 'git') {
    const [sub, ...rest] = args[0] === '--no-pager' ? args.slice(1) : args;
    const spec = sub === undefined ? undefined : GIT[sub];
    if (spec === undefined) return `git ${sub ?? ''} is not on the allow-list`.trim();
    const offset = args.length - rest.length;
    return judge(`git ${sub}`, spec, rest, { ...argContext, globs: argContext.globs.slice(offset) });
  }
  if (name === 'cd' && args.length === 0)
    return 'cd without a directory goes home, outside the working directory';
  const spec = Object.hasOwn(ALLOW_LIST, name) ? ALLOW_LIST[name] : undefined;
  if (spec === undefined) return `${name} is not on the allow-list`;
  return judge(name, spec, args, argContext);
}

function judge(name: string, spec: Spec, args: readonly string[], context: ArgContext): string | null {
  const parsed = parseArgs(args, spec);
  if (typeof parsed === 'string') return `${name}: ${parsed}`;
  const kind = spec.operands ?? 'paths';
  if (kind === 'none' && parsed.operands.length > 0) return `${name} takes no operands here`;
  if (spec.maxOperands !== undefined && parsed.operands.length > spec.maxOperands)
    return `${name} with more than ${spec.maxOperands} operand(s) may write a file`;
  const why =
    spec.check !== undefined
      ? spec.check(parsed, context)
      : kind === 'paths'
        ? checkPaths(parsed.operands, context)
        : null;
  return why === null ? null : `${name}: ${why}`;
}
