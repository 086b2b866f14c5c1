/**
 * Commands whose effect cannot be known before they run (issue 12, item 3): the text that will
 * execute is computed at run time (a substitution, a variable as the command name), handed to a
 * shell or an interpreter as a string (`bash -c`, `eval`, `python -c`, `node -e`, `awk` with
 * `system()`), read from a pipe or a file (`… | sh`, `base64 -d | bash`, `source x.sh`), or fed to
 * a shell by another program (`xargs sh`, `find -exec sh`). The rules in rules.ts judge what a
 * command says; these rows catch what it does not say. They are tried only when no rule in
 * rules.ts matched, so a known danger inside (`bash -c "rm -rf x"`) keeps its own reason.
 *
 * An approval of such a command is remembered for that exact command, never for its kind: `session`
 * on `python3 -c "print(1)"` must not approve the next, different `python3 -c`.
 */
import type { CommandView } from './command-view.js';
import { SHELLS } from './rules.js';

export interface OpaqueRule {
  /** Stable id, shown to the human with the reason. */
  rule: string;
  reason: string;
  matches(view: CommandView, pipelineIndex: number): boolean;
}

const AWKS = new Set(['awk', 'gawk', 'mawk', 'nawk']);

/** For each interpreter, the option words that hand it program text on the command line. */
const CODE_FLAGS: readonly { heads: RegExp; flag: RegExp }[] = [
  { heads: /^(python[\d.]*|pypy[\d.]*)$/, flag: /^-[A-Za-z]*c$/ },
  { heads: /^(node|nodejs|bun)$/, flag: /^(-[A-Za-z]*[ep]|--eval|--print)(=.*)?$/ },
  { heads: /^perl[\d.]*$/, flag: /^-[A-Za-z]*[eE]$/ },
  { heads: /^(ruby|lua[\d.]*|luajit|Rscript|osascript)$/, flag: /^-[A-Za-z]*e$/ },
  { heads: /^php[\d.]*$/, flag: /^-[rRBE]$/ },
];

/** Programs that run code read from their standard input when given no script. */
function runsCode(head: string): boolean {
  return (
    SHELLS.has(head) ||
    AWKS.has(head) ||
    CODE_FLAGS.some((c) => c.heads.test(head)) ||
    head === 'source' ||
    head === '.' ||
    head === 'eval' ||
    head === 'deno'
  );
}

/** Operands of an interpreter: the script it would run, if any (`-` is standard input). */
function scriptOperands(view: CommandView): string[] {
  const end = view.args.indexOf('--');
  return view.args
    .slice(0, end < 0 ? view.args.length : end)
    .filter((a) => !a.startsWith('-'))
    .concat(end < 0 ? [] : view.args.slice(end + 1));
}

function readsCodeFromStdin(view: CommandView): boolean {
  if (!runsCode(view.head) || AWKS.has(view.head)) return false;
  const operands = scriptOperands(view);
  return operands.length === 0 || operands[0] === '-' || (SHELLS.has(view.head) && view.args.includes('-s'));
}

/** The awk program text: the first operand unless `-f FILE` names it (values of -F/-v skipped). */
function awkRunsCommands(view: CommandView): boolean {
  const program: string[] = [];
  for (let i = 0; i < view.args.length; i++) {
    const arg = view.args[i] ?? '';
    if (arg === '-F' || arg === '-v' || arg === '-f') i++;
    else if (!arg.startsWith('-')) program.push(arg);
  }
  // system(), `print … | "cmd"`, `"cmd" | getline` and gawk's `|&` all start a shell.
  return program.some((text) => /\bsystem\s*\(|\|/.test(text));
}

export const OPAQUE_RULES: readonly OpaqueRule[] = [
  {
    rule: 'dynamic-command',
    reason: 'the program to run is computed when the command runs (a variable or substitution as its name)',
    matches: (v) => /[$`]/.test(v.head),
  },
  {
    rule: 'eval',
    reason: 'evaluates text as shell code (eval), so what runs cannot be checked beforehand',
    matches: (v) => v.head === 'eval',
  },
  {
    rule: 'exec',
    reason: 'replaces the shell with another program (exec)',
    matches: (v) => v.wrappers.includes('exec') && v.head !== '',
  },
  {
    rule: 'shell-string',
    reason: 'hands a string to a shell to run (sh -c / bash -c)',
    matches: (v) => SHELLS.has(v.head) && v.args.some((a) => /^-[A-Za-z]*c[A-Za-z]*$/.test(a)),
  },
  {
    rule: 'interpreter-code',
    reason: 'runs program text given on the command line (python -c, node -e, perl -e, awk system() …)',
    matches: (v) =>
      CODE_FLAGS.some((c) => c.heads.test(v.head) && v.args.some((a) => c.flag.test(a))) ||
      (v.head === 'deno' && v.args[0] === 'eval') ||
      (AWKS.has(v.head) && awkRunsCommands(v)),
  },
  {
    rule: 'source-file',
    reason: 'runs a file as shell code inside the current shell (source / .)',
    matches: (v) => v.head === 'source' || v.head === '.',
  },
  {
    rule: 'shell-from-program',
    reason:
      'another program starts a shell or interpreter with arguments it computes (xargs sh, find -exec sh)',
    matches: (v) =>
      (v.wrappers.includes('xargs') && runsCode(v.head)) ||
      (v.head === 'find' &&
        v.args.some(
          (a, i) => ['-exec', '-execdir', '-ok', '-okdir'].includes(a) && runsCode(v.args[i + 1] ?? ''),
        )),
  },
  {
    rule: 'pipe-to-shell',
    reason: 'feeds text to a shell or interpreter through a pipe or redirect (… | sh, base64 -d | bash)',
    matches: (v, index) =>
      readsCodeFromStdin(v) && (index > 0 || v.redirects.some((r) => r.op === '<' || r.op.startsWith('<<'))),
  },
];

export const SUBSTITUTION_RULE = {
  rule: 'substitution',
  reason: 'runs a command substitution ($( ), backticks, <( ), >( )) whose result is known only when it runs',
} as const;
