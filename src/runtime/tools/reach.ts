/**
 * The gateway's own files are off-limits to every tool in every mode, yolo included (issue 25
 * item 5, docs/tool-reach.md): the home (config.yaml, state.db, logs, the run folder) and the
 * control socket's folder. A project tool's path is resolved (symlinks included) and refused inside
 * them; a terminal command is refused when its text names them — literally, or through a word that
 * resolves into them from the cwd or from HOME. Reading a command's text is best-effort: a command
 * can build a path at run time (`d=.gate; cd ~/${d}house`). Safe mode does not rely on it alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ToolDefinition, ToolResult } from '../types.js';
import { createTerminalTool } from './terminal.js';

/** The tools whose `path` argument names a file. */
const PATH_TOOLS = new Set(['read_file', 'list_directory', 'write_file']);

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** `target` with the deepest existing ancestor resolved through symlinks. */
function resolveExisting(target: string): string {
  const rest: string[] = [];
  let existing = target;
  for (;;) {
    try {
      return path.join(fs.realpathSync(existing), ...rest);
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) return target;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
}

/** The off-limits folders as given and as resolved, without duplicates. */
export function offLimitRoots(roots: readonly string[]): string[] {
  return [...new Set(roots.flatMap((root) => [path.resolve(root), resolveExisting(path.resolve(root))]))];
}

/** The root `target` lies in (symlinks resolved), or null. */
export function offLimitsRootOf(target: string, roots: readonly string[]): string | null {
  const absolute = path.resolve(target);
  const resolved = resolveExisting(absolute);
  return roots.find((root) => isInside(absolute, root) || isInside(resolved, root)) ?? null;
}

const FILE_CHAR = /[A-Za-z0-9._-]/;

/** Whether `text` mentions `root` as a path (not as the prefix of a longer name such as `<root>-x`). */
function mentions(text: string, root: string): boolean {
  for (let at = text.indexOf(root); at >= 0; at = text.indexOf(root, at + 1)) {
    const next = text[at + root.length];
    if (next === undefined || !FILE_CHAR.test(next)) return true;
  }
  return false;
}

/** Words of a command that may be paths: split at blanks, quotes and shell operators. */
function words(command: string): string[] {
  return command.split(/[\s'"`;|&<>(){}=,]+/).filter((w) => w !== '');
}

/** The off-limits root a command names, or null (best-effort: see the module comment). */
export function commandNamesOffLimits(command: string, cwd: string, roots: readonly string[]): string | null {
  const home = os.homedir();
  for (const root of roots) {
    if (mentions(command, root)) return root;
    if (isInside(root, home)) {
      const rel = path.relative(home, root);
      for (const form of [`~/${rel}`, `$HOME/${rel}`, `\${HOME}/${rel}`])
        if (mentions(command, form)) return root;
    }
  }
  // Relative words are read from the cwd, from HOME, and from every folder a `cd`/`pushd` names.
  const bases = [cwd, home];
  const all = words(command).map((raw) => raw.replace(/^(~|\$HOME|\$\{HOME\})(?=\/|$)/, home));
  all.forEach((word, i) => {
    if ((all[i - 1] === 'cd' || all[i - 1] === 'pushd') && !word.startsWith('-'))
      bases.push(...(path.isAbsolute(word) ? [word] : [path.resolve(cwd, word), path.resolve(home, word)]));
  });
  for (const word of all) {
    for (const base of path.isAbsolute(word) ? [''] : bases) {
      const hit = offLimitsRootOf(path.resolve(base, word), roots);
      if (hit !== null) return hit;
    }
  }
  return null;
}

function refused(what: string): ToolResult {
  return {
    content: `Refused: ${what} the gateway's own files. Tools may not touch the Gatehouse home or its socket, in any mode.`,
    isError: true,
  };
}

/**
 * The tools with the gateway's files guarded: checked before the tool runs (and before a safe-mode
 * call is handed to its worker), whatever the session's approvals.
 */
export function guardGatewayFiles(
  tools: readonly ToolDefinition[],
  roots: readonly string[],
): ToolDefinition[] {
  const guarded = offLimitRoots(roots);
  return tools.map((tool) => {
    if (tool.name === 'terminal') {
      return {
        ...tool,
        run: (args, context) =>
          typeof args.command === 'string' &&
          commandNamesOffLimits(args.command, context.cwd, guarded) !== null
            ? Promise.resolve(refused('this command names'))
            : tool.run(args, context),
      };
    }
    if (PATH_TOOLS.has(tool.name)) {
      return {
        ...tool,
        run: (args, context) =>
          typeof args.path === 'string' &&
          offLimitsRootOf(path.resolve(context.cwd, args.path), guarded) !== null
            ? Promise.resolve(refused('this path is among'))
            : tool.run(args, context),
      };
    }
    return tool;
  });
}

/** The tools with the terminal given exactly `env` (env.ts: the gateway's own is never passed). */
export function withToolEnvironment(
  tools: readonly ToolDefinition[],
  env: Readonly<Record<string, string>>,
): ToolDefinition[] {
  return tools.map((tool) => (tool.name === 'terminal' ? createTerminalTool({ env }) : tool));
}
