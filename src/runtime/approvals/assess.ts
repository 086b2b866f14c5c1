/**
 * What the approval of one terminal command rests on (issue 25): is it proven safe by the allow-list,
 * and if not, does the deny-list detector recognise a danger in it (the words the human reads)?
 *
 * Proven safe means: bash's grammar (bash-tree.ts) reads the line as plain simple commands with
 * literal words; the hand lexer (shell-parse.ts) reads the very same command words (two readers that
 * disagree mean one of them is being fooled, so a human looks); every command is on the allow-list
 * with its arguments understood; every redirection reads a file inside the working directory,
 * duplicates a descriptor, or writes to /dev/null.
 */
import path from 'node:path';
import { allowListed } from './allowlist.js';
import { readTree, type TreeCommand, type TreeRedirect } from './bash-tree.js';
import { classifyCommand } from './detector.js';
import { pathOutside } from './inside-cwd.js';
import { parseShell } from './shell-parse.js';

export type Assessment =
  | { allowListed: true }
  | {
      allowListed: false;
      /** The detector recognised a danger: `approvals.mode: detect` asks only for these. */
      flagged: boolean;
      /** Shown to the human: the detector's reason, or why the allow-list did not prove it safe. */
      reason: string;
    };

export async function assessCommand(command: string, cwd: string): Promise<Assessment> {
  const why = await notProvenSafe(command, cwd);
  if (why === null) return { allowListed: true };
  const verdict = classifyCommand(command, { cwd });
  return verdict.dangerous
    ? { allowListed: false, flagged: true, reason: verdict.reason }
    : { allowListed: false, flagged: false, reason: `not on the allow-list: ${why}` };
}

/** null when the whole line is proven safe; otherwise the first reason it is not. */
export async function notProvenSafe(command: string, cwd: string): Promise<string | null> {
  if (command.trim() === '') return 'the command is empty';
  // A carriage return or another control character is read differently by bash and by parsers.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  if (/[\u0000-\u0008\u000b-\u001f\u007f]/.test(command)) return 'it holds control characters';
  const tree = await readTree(command);
  if (!tree.simple) return tree.why;
  const handWords = parseShell(command)
    .pipelines.flat()
    .map((c) => c.words);
  const treeWords = tree.commands.map((c) => c.words);
  if (JSON.stringify(handWords) !== JSON.stringify(treeWords)) {
    return 'two shell readers disagree about which commands it runs';
  }
  let dir = cwd;
  for (const simple of tree.commands) {
    const why = commandNotSafe(simple, cwd, dir);
    if (why !== null) return why;
    // `cd DIR` moves where the next commands' relative paths resolve (cd was checked inside the cwd).
    if (simple.words[0] === 'cd')
      dir = path.resolve(dir, simple.words.slice(1).find((w) => w !== '--') ?? '.');
  }
  return null;
}

function commandNotSafe(simple: TreeCommand, cwd: string, dir: string): string | null {
  for (const redirect of simple.redirects) {
    const why = redirectNotSafe(redirect, cwd, dir);
    if (why !== null) return why;
  }
  return allowListed(simple.words, { cwd, dir, globs: simple.globs });
}

function redirectNotSafe(redirect: TreeRedirect, cwd: string, dir: string): string | null {
  const { op, target } = redirect;
  if ((op === '>&' || op === '<&') && /^(\d+|-)$/.test(target)) return null;
  if (op === '<') return pathOutside(target, dir, cwd);
  if (['>', '>>', '&>', '&>>', '>|', '>&'].includes(op)) {
    return target === '/dev/null' ? null : `it writes to ${target} (only /dev/null is safe)`;
  }
  return `the redirection ${op} is not known to be safe`;
}
