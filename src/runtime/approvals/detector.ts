/**
 * Decides whether a terminal command needs a human's approval before it runs (SPEC RUN-3).
 *
 * The line is split into its parts (`;`, `&&`, `||`, `|`, subshells, `$( )`, backticks, `<( )`),
 * each part is seen through its wrappers (`env`, `nohup`, `xargs`, `timeout` …), `bash -c '…'` and
 * `eval …` are read again as command lines, and every part is checked against the table in rules.ts.
 * This is a seatbelt, not a sandbox: docs/approvals.md says what it cannot see.
 */
import os from 'node:os';
import path from 'node:path';
import { expandHome, viewCommand, type CommandView } from './command-view.js';
import { OPAQUE_RULES, SUBSTITUTION_RULE } from './opaque.js';
import { DANGER_RULES, LINE_RULES, SHELLS } from './rules.js';
import { parseShell } from './shell-parse.js';

export type Classification =
  | { dangerous: false }
  | {
      dangerous: true;
      /** Why, in words a human reads. */
      reason: string;
      /** The rule id (see DANGER_RULES / LINE_RULES). */
      rule: string;
      /** The program that triggered the rule (`rm`, `git`, …), after wrappers. */
      head: string;
      /**
       * What an approval remembers: `pattern` (the rule and head: a kind of action) for the rules
       * in rules.ts; `command` (this exact command line) for opaque code, whose next instance may
       * do anything.
       */
      memory: 'pattern' | 'command';
    };

export interface ClassifyOptions {
  /** The session's working directory (absolute). Writes inside it are the session's own business. */
  cwd: string;
}

/** Nesting deeper than this (`bash -c "bash -c \"…\""`) is itself suspicious. */
const MAX_DEPTH = 6;

export function classifyCommand(command: string, options: ClassifyOptions): Classification {
  const known = classifyLine(command, options.cwd, 0);
  return known.dangerous ? known : classifyOpaque(command);
}

/** The first part of the line whose effect cannot be known before it runs (opaque.ts). */
function classifyOpaque(line: string): Classification {
  const parsed = parseShell(line);
  for (const pipeline of parsed.pipelines) {
    const views = pipeline.map(viewCommand).filter((v): v is CommandView => v !== null);
    for (const [index, view] of views.entries()) {
      const rule = OPAQUE_RULES.find((r) => r.matches(view, index));
      if (rule)
        return { dangerous: true, rule: rule.rule, reason: rule.reason, head: view.head, memory: 'command' };
    }
  }
  if (parsed.substitutions.length > 0)
    return { dangerous: true, ...SUBSTITUTION_RULE, head: '', memory: 'command' };
  return { dangerous: false };
}

function classifyLine(line: string, cwd: string, depth: number): Classification {
  if (depth > MAX_DEPTH) {
    return {
      dangerous: true,
      rule: 'too-deep',
      reason: 'nests shells too deeply to check',
      head: '',
      memory: 'command',
    };
  }
  for (const lineRule of LINE_RULES) {
    if (lineRule.pattern.test(line)) {
      return { dangerous: true, rule: lineRule.rule, reason: lineRule.reason, head: '', memory: 'pattern' };
    }
  }
  const parsed = parseShell(line);
  let dir = cwd;
  for (const pipeline of parsed.pipelines) {
    const views = pipeline.map(viewCommand).filter((v): v is CommandView => v !== null);
    for (let index = 0; index < views.length; index++) {
      const view = views[index];
      if (view === undefined) continue;
      for (const rule of DANGER_RULES) {
        if (rule.matches(view, { cwd, dir, pipeline: views, index })) {
          return {
            dangerous: true,
            rule: rule.rule,
            reason: rule.reason,
            head: view.head,
            memory: 'pattern',
          };
        }
      }
      if (view.head === 'cd') dir = nextDir(dir, view.args);
      const inner = innerLine(view);
      if (inner !== null) {
        const verdict = classifyLine(inner, cwd, depth + 1);
        if (verdict.dangerous) return verdict;
      }
    }
  }
  for (const body of parsed.substitutions) {
    const verdict = classifyLine(body, cwd, depth + 1);
    if (verdict.dangerous) return verdict;
  }
  return { dangerous: false };
}

/** Follows `cd DIR` so `cd /etc && echo x > hosts` is seen as a write to /etc/hosts. */
function nextDir(dir: string, args: readonly string[]): string {
  const target = args.find((a) => !a.startsWith('-'));
  if (target === undefined) return os.homedir();
  // An unknown variable makes the directory unknowable; stay put (a documented limit).
  if (/\$(?!\{?HOME\b)/.test(target)) return dir;
  return path.resolve(dir, expandHome(target));
}

/** The command line a shell or `eval` will run from its arguments, if any. */
function innerLine(view: CommandView): string | null {
  if (view.head === 'eval') return view.args.join(' ');
  if (!SHELLS.has(view.head)) return null;
  const flag = view.args.findIndex((a) => /^-[A-Za-z]*c[A-Za-z]*$/.test(a));
  return flag >= 0 ? (view.args[flag + 1] ?? null) : null;
}
