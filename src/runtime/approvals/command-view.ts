/**
 * Helpers the detector's rules share: the effective command head of a simple command (after
 * environment assignments and wrappers such as `env`, `nohup`, `xargs`), flag tests, and the one
 * question every "write outside the cwd" rule asks: does this path leave the working directory?
 */
import os from 'node:os';
import path from 'node:path';
import type { Redirect, SimpleCommand } from './shell-parse.js';

/** A simple command seen through its wrappers: `head` is the program that really runs. */
export interface CommandView {
  head: string;
  args: string[];
  redirects: Redirect[];
  substitutions: string[];
  /** The wrappers seen through, outermost first (`xargs`, `exec` …): some change what runs. */
  wrappers: string[];
}

/** Programs that run the rest of their arguments as a command. Value: options that take a value. */
const WRAPPERS: Record<string, readonly string[]> = {
  env: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'],
  nohup: [],
  time: ['-f', '--format', '-o', '--output'],
  nice: ['-n', '--adjustment'],
  ionice: ['-c', '-n', '-p'],
  exec: ['-a'],
  command: [],
  builtin: [],
  stdbuf: ['-i', '-o', '-e'],
  xargs: ['-I', '-i', '-n', '-P', '-L', '-d', '-E', '-s', '-a', '--arg-file', '--delimiter'],
  timeout: ['-s', '--signal', '-k', '--kill-after'],
  watch: ['-n', '--interval'],
};

/** Shell keywords that may precede a command on the same line. */
const KEYWORDS = new Set(['!', '{', '}', 'if', 'then', 'else', 'elif', 'fi', 'do', 'done', 'while', 'until']);

const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

export function baseName(word: string): string {
  const slash = word.lastIndexOf('/');
  return slash >= 0 ? word.slice(slash + 1) : word;
}

/** Resolves wrappers and assignments so `sudo`-less `env FOO=1 nohup rm -rf x` is seen as `rm`. */
export function viewCommand(command: SimpleCommand): CommandView | null {
  const words = [...command.words];
  const wrappers: string[] = [];
  while (words.length > 0) {
    const first = words[0] ?? '';
    if (ASSIGNMENT.test(first) || KEYWORDS.has(first)) {
      words.shift();
      continue;
    }
    const name = baseName(first);
    const valued = WRAPPERS[name];
    if (valued === undefined) break;
    wrappers.push(name);
    words.shift();
    // Skip the wrapper's own options (and their values), and `timeout`'s duration.
    while (words.length > 0) {
      const next = words[0] ?? '';
      if (next === '--') {
        words.shift();
        break;
      }
      if (next.startsWith('-') || (name === 'env' && ASSIGNMENT.test(next))) {
        words.shift();
        if (valued.includes(next)) words.shift();
        continue;
      }
      if (name === 'timeout' && /^\d/.test(next)) {
        words.shift();
      }
      break;
    }
  }
  const head = words.shift();
  if (head === undefined) {
    return command.redirects.length > 0
      ? { head: '', args: [], redirects: command.redirects, substitutions: command.substitutions, wrappers }
      : null;
  }
  return {
    head: baseName(head),
    args: words,
    redirects: command.redirects,
    substitutions: command.substitutions,
    wrappers,
  };
}

/** Arguments before `--` that are options. */
function optionsOf(args: readonly string[]): string[] {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).filter((a) => a.startsWith('-') && a !== '-');
}

/** True when a short flag letter appears in any bundled short option (`-rf`) or a long one is given. */
export function hasFlag(args: readonly string[], short: string, ...long: string[]): boolean {
  return optionsOf(args).some((a) =>
    a.startsWith('--')
      ? long.some((l) => a === l || a.startsWith(`${l}=`))
      : short !== '' && /^-[A-Za-z]+$/.test(a) && a.includes(short),
  );
}

/** Arguments that are not options (everything after `--` counts as an operand). */
export function operands(args: readonly string[]): string[] {
  const end = args.indexOf('--');
  const before = (end < 0 ? args : args.slice(0, end)).filter((a) => !a.startsWith('-') || a === '-');
  return end < 0 ? before : [...before, ...args.slice(end + 1)];
}

/** Writing here never leaves a mark outside the session: discarded output and the terminal. */
const HARMLESS_TARGETS = ['/dev/null', '/dev/stdout', '/dev/stderr', '/dev/tty'];

function scratchRoots(): string[] {
  return [...new Set([path.resolve(os.tmpdir()), '/tmp', '/var/tmp'])];
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Expands `~`, `$HOME` and `${HOME}`; other variables cannot be known before the command runs. */
export function expandHome(target: string): string {
  const home = os.homedir();
  return target.replace(/^~(?=\/|$)/, home).replace(/^\$\{?HOME\}?(?=\/|$)/, home);
}

/**
 * Does writing to `target` (relative to `dir`, where an earlier `cd` may have moved) touch something
 * outside the session's cwd? Scratch space (the temp dir,
 * /tmp, /var/tmp) and the harmless devices above do not count; other devices under /dev do.
 * A target that depends on an unknown variable is not flagged: we cannot tell (a documented limit).
 */
export function escapesCwd(target: string, cwd: string, dir: string = cwd): boolean {
  if (target === '' || /\$(?!\{?HOME\b)/.test(target) || /^[<>]\(/.test(target)) return false;
  const resolved = path.resolve(dir, expandHome(target));
  if (HARMLESS_TARGETS.includes(resolved) || resolved.startsWith('/dev/fd/')) return false;
  if (isInside(resolved, cwd)) return false;
  return !scratchRoots().some((root) => isInside(resolved, root));
}

/** A device node other than the harmless ones: writing to it can destroy a disk. */
export function isDevice(target: string): boolean {
  return target.startsWith('/dev/') && !HARMLESS_TARGETS.includes(target) && !target.startsWith('/dev/fd/');
}
