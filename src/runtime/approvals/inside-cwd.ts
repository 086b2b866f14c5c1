/**
 * The path rule of the allow-list: a path a command is allowed to read unasked lies inside the
 * session's working directory, as written and after symlinks are followed. No `..` that climbs out,
 * no absolute path elsewhere, no symlink that leads out (the nearest existing ancestor is resolved
 * for a path that does not exist yet).
 */
import fs from 'node:fs';
import path from 'node:path';

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function realOrNearest(target: string): string {
  let current = target;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(fs.realpathSync(current), ...rest.reverse());
    } catch {
      const parent = path.dirname(current);
      if (parent === current) return target;
      rest.push(path.basename(current));
      current = parent;
    }
  }
}

/** null when `target` (relative to `dir`) stays inside `cwd`; otherwise why it does not. */
export function pathOutside(target: string, dir: string, cwd: string): string | null {
  if (target === '-' || target === '/dev/null') return null;
  const resolved = path.resolve(dir, target);
  if (!isInside(resolved, cwd)) return `${target} is outside the working directory`;
  if (!isInside(realOrNearest(resolved), realOrNearest(cwd))) {
    return `${target} leads outside the working directory through a symlink`;
  }
  return null;
}

/**
 * null when a glob pattern can only match entries of a directory inside the cwd, none of them a
 * symlink that leads out. Globs over directories (`*\/x`) and over dot files (`.*` matches `..`) ask.
 */
export function globOutside(pattern: string, dir: string, cwd: string): string | null {
  const slash = pattern.lastIndexOf('/');
  const base = slash < 0 ? '.' : pattern.slice(0, slash) || '/';
  const leaf = pattern.slice(slash + 1);
  if (/[*?[]/.test(base)) return `${pattern} globs over directories`;
  if (leaf.startsWith('.')) return `${pattern} globs over dot files`;
  const outside = pathOutside(base, dir, cwd);
  if (outside !== null) return outside;
  const folder = path.resolve(dir, base);
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(folder, { withFileTypes: true });
  } catch {
    return null;
  }
  const matches = leafMatcher(leaf);
  for (const entry of entries) {
    if (!entry.isSymbolicLink() || !matches.test(entry.name)) continue;
    if (pathOutside(entry.name, folder, cwd) !== null) {
      return `${pattern} may match ${entry.name}, a symlink that leads outside the working directory`;
    }
  }
  return null;
}

/** A bash glob leaf as a regular expression (`*`, `?`, `[…]`); unsure classes match everything. */
function leafMatcher(leaf: string): RegExp {
  let source = '';
  for (let i = 0; i < leaf.length; i++) {
    const c = leaf[i] ?? '';
    if (c === '*') source += '.*';
    else if (c === '?') source += '.';
    else if (c === '[') return /.*/;
    else if (c === '\\') source += (leaf[++i] ?? '').replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    else source += c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source}$`, 's');
}
