/**
 * The `project` toolset (SPEC LOC-6: added for tui and gui sessions): small file tools confined to
 * the session's cwd. A path that leaves the cwd, by `..`, an absolute path or a symlink, is refused.
 * Writing a file is an `edit` and asks for approval (once | deny) unless the session is yolo.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ToolContext, ToolDefinition, ToolResult } from '../types.js';

export const READ_CAP_BYTES = 256 * 1024;
export const LIST_CAP_ENTRIES = 1000;

function fail(content: string): ToolResult {
  return { content, isError: true };
}

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Resolves a model-given path inside the cwd, following symlinks of the part that exists, or
 * explains why not. The deepest existing ancestor is resolved so a new file under a symlinked
 * directory cannot land outside either.
 */
export async function confinePath(cwd: string, given: unknown): Promise<string | ToolResult> {
  if (typeof given !== 'string' || given === '') return fail('`path` must be a non-empty string.');
  if (given.includes('\0')) return fail('`path` must not contain NUL characters.');
  const root = await fs.realpath(cwd);
  const target = path.resolve(root, given);
  if (!isInside(target, root)) return fail(`Refused: ${given} is outside the working directory.`);
  let existing = target;
  const rest: string[] = [];
  for (;;) {
    try {
      const real = await fs.realpath(existing);
      const resolved = path.join(real, ...rest);
      if (!isInside(resolved, root)) return fail(`Refused: ${given} leads outside the working directory.`);
      return resolved;
    } catch {
      if (existing === root) return fail(`Refused: ${given} cannot be resolved.`);
      rest.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
}

function errorText(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file or directory';
  if (code === 'EISDIR') return 'is a directory';
  if (code === 'ENOTDIR') return 'not a directory';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  return code ?? 'unexpected error';
}

export const readFileTool: ToolDefinition = {
  name: 'read_file',
  toolset: 'project',
  description: `Read a text file inside the working directory (at most ${READ_CAP_BYTES} bytes are returned).`,
  parameters: {
    type: 'object',
    properties: { path: { type: 'string', description: 'Path relative to the working directory.' } },
    required: ['path'],
    additionalProperties: false,
  },
  async run(args, context) {
    const target = await confinePath(context.cwd, args.path);
    if (typeof target !== 'string') return target;
    try {
      const handle = await fs.open(target, 'r');
      try {
        const { size } = await handle.stat();
        const buffer = Buffer.alloc(Math.min(size, READ_CAP_BYTES));
        await handle.read(buffer, 0, buffer.length, 0);
        const text = buffer.toString('utf8');
        return {
          content:
            size > READ_CAP_BYTES
              ? `${text}\n[… file truncated: ${size - READ_CAP_BYTES} bytes not shown …]`
              : text,
        };
      } finally {
        await handle.close();
      }
    } catch (error) {
      return fail(`Cannot read ${String(args.path)}: ${errorText(error)}.`);
    }
  },
};

export const listDirectoryTool: ToolDefinition = {
  name: 'list_directory',
  toolset: 'project',
  description:
    'List the entries of a directory inside the working directory; directories end with `/`, symlinks with `@`.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'Directory relative to the working directory (default `.`).' },
    },
    additionalProperties: false,
  },
  async run(args, context) {
    const target = await confinePath(context.cwd, args.path ?? '.');
    if (typeof target !== 'string') return target;
    try {
      const entries = await fs.readdir(target, { withFileTypes: true });
      const names = entries
        .map((e) => (e.isDirectory() ? `${e.name}/` : e.isSymbolicLink() ? `${e.name}@` : e.name))
        .sort();
      const shown = names.slice(0, LIST_CAP_ENTRIES);
      if (names.length > LIST_CAP_ENTRIES)
        shown.push(`[… ${names.length - LIST_CAP_ENTRIES} more entries …]`);
      return { content: shown.length === 0 ? '(empty directory)' : shown.join('\n') };
    } catch (error) {
      return fail(`Cannot list ${typeof args.path === 'string' ? args.path : '.'}: ${errorText(error)}.`);
    }
  },
};

async function approveEdit(
  context: ToolContext,
  relative: string,
  bytes: number,
): Promise<ToolResult | null> {
  const outcome = await context.requestApproval({
    kind: 'edit',
    command: `write_file ${relative} (${bytes} bytes)`,
    reason: 'writes a file in the working directory',
    cwd: context.cwd,
    // An edit always changes a file: `detect` asks for it as for a detector hit.
    gate: { yolo: context.yolo, flagged: true },
  });
  switch (outcome.kind) {
    case 'approved':
      return null;
    case 'denied':
      return fail(
        outcome.by === 'config'
          ? 'Denied by configuration (approvals.mode: deny). The file was not written.'
          : 'The user denied this edit. The file was not written.',
      );
    case 'timeout':
      return fail('Nobody answered the approval request in time. The file was not written.');
    case 'cancelled':
      return fail('Interrupted while waiting for approval. The file was not written.');
  }
}

export const writeFileTool: ToolDefinition = {
  name: 'write_file',
  toolset: 'project',
  changesFiles: true,
  description:
    'Create or replace a text file inside the working directory (parent directories are created). ' +
    'The user approves each write unless the session runs without approvals.',
  parameters: {
    type: 'object',
    properties: {
      path: { type: 'string', description: 'Path relative to the working directory.' },
      content: { type: 'string', description: 'The complete new content of the file.' },
    },
    required: ['path', 'content'],
    additionalProperties: false,
  },
  marksOwnStart: true,
  async run(args, context) {
    if (typeof args.content !== 'string') return fail('`content` must be a string.');
    const target = await confinePath(context.cwd, args.path);
    if (typeof target !== 'string') return target;
    const relative = path.relative(await fs.realpath(context.cwd), target);
    const bytes = Buffer.byteLength(args.content);
    const refusal = await approveEdit(context, relative, bytes);
    if (refusal !== null) return refusal;
    await context.markStarted();
    try {
      await fs.mkdir(path.dirname(target), { recursive: true });
      await fs.writeFile(target, args.content);
      return { content: `Wrote ${bytes} bytes to ${relative}.` };
    } catch (error) {
      return fail(`Cannot write ${relative}: ${errorText(error)}.`);
    }
  },
};

export const projectTools: readonly ToolDefinition[] = [readFileTool, listDirectoryTool, writeFileTool];
