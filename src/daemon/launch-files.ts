/**
 * The files a launch reads from disk (the I/O behind LaunchLookups, domain/local/launch-context.ts):
 * the project's instruction files from `cwd` up to its repository root, the owner's personal
 * instructions and skills in the home, and the code-workspace markers of the coding posture.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { InstructionFile } from '../domain/local/launch-context.js';
import type { LaunchLookups } from '../domain/local/launch-policy.js';
import { offLimitRoots, offLimitsRootOf } from '../runtime/tools/reach.js';
import type { HomeLayout } from './home.js';
import { listSkills, readSkill } from './skills.js';

/**
 * The names of a project's instruction files, in order of preference: in each directory the first
 * one present is taken (repositories often keep one as a link to another).
 */
export const PROJECT_RULE_FILES = ['AGENTS.md', 'CLAUDE.md', 'GEMINI.md', '.cursorrules'] as const;
/** The owner's personal instructions: `<home>/AGENTS.md`. */
export const PERSONAL_INSTRUCTIONS_FILE = 'AGENTS.md';

/** Past this many bytes a file is read no further (the frozen prompt caps it far below). */
const READ_MAX_BYTES = 256 * 1024;

const CODE_MARKERS = [
  '.git',
  'package.json',
  'pyproject.toml',
  'Cargo.toml',
  'go.mod',
  'pom.xml',
  'Makefile',
];

function readPrefix(file: string): InstructionFile | null {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return null;
  }
  try {
    const stat = fs.fstatSync(fd);
    if (!stat.isFile()) return null;
    const buffer = Buffer.alloc(Math.min(stat.size, READ_MAX_BYTES));
    const read = fs.readSync(fd, buffer, 0, buffer.length, 0);
    return { path: file, text: buffer.subarray(0, read).toString('utf8'), size: stat.size };
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The directories whose rules apply to `cwd`, outermost first: from the repository root (the
 * nearest directory holding `.git`) down to `cwd`; only `cwd` itself outside a repository.
 */
export function ruleDirectories(cwd: string): string[] {
  const chain: string[] = [];
  for (let dir = path.resolve(cwd); ; dir = path.dirname(dir)) {
    chain.push(dir);
    if (fs.existsSync(path.join(dir, '.git'))) return chain.reverse();
    if (path.dirname(dir) === dir) return [path.resolve(cwd)];
  }
}

export function projectRules(cwd: string): InstructionFile[] {
  const files: InstructionFile[] = [];
  for (const dir of ruleDirectories(cwd)) {
    for (const name of PROJECT_RULE_FILES) {
      const file = readPrefix(path.join(dir, name));
      if (file) {
        files.push(file);
        break;
      }
    }
  }
  return files;
}

/** The folders no tool may touch (docs/tool-reach.md): the home, and the control socket's folder. */
export function gatewayRoots(layout: HomeLayout): string[] {
  const socketDir = path.dirname(layout.controlSocket);
  return socketDir === layout.root ? [layout.root] : [layout.root, socketDir];
}

export function launchLookups(homeRoot: string, offLimits: readonly string[] = [homeRoot]): LaunchLookups {
  const roots = offLimitRoots(offLimits);
  return {
    cwdRefusal: (cwd) => offLimitsRootOf(cwd, roots),
    isDirectory: (p) => fs.statSync(p, { throwIfNoEntry: false })?.isDirectory() ?? false,
    isCodeWorkspace: (p) => CODE_MARKERS.some((m) => fs.existsSync(path.join(p, m))),
    readSkill: (name) => readSkill(homeRoot, name),
    listSkills: () => listSkills(homeRoot).skills,
    projectRules,
    personalInstructions: () => readPrefix(path.join(homeRoot, PERSONAL_INSTRUCTIONS_FILE)),
  };
}
