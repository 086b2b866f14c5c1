/**
 * Hooks (SPEC LOC-5 `accept_hooks`): user-defined commands run on a session's lifecycle events.
 *
 * hook           One command (`bash -c`, in the session's cwd) bound to one event, with a timeout.
 * event          before_tool (may block the call), after_tool, turn_start, turn_end.
 * origin         `home`: the `hooks` section of the home's config.yaml, run for every session;
 *                `project`: PROJECT_HOOKS_FILE in the session's cwd, run only for sessions
 *                created with `accept_hooks: true`, read afresh at the start of each turn.
 *
 * Both use the same shape (HOOKS_SCHEMA); docs/hooks.md is the user's reference.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { z } from 'zod';

export const HOOK_EVENTS = ['before_tool', 'after_tool', 'turn_start', 'turn_end'] as const;
export type HookEvent = (typeof HOOK_EVENTS)[number];

/** Where a project declares its hooks, relative to the session's cwd. */
export const PROJECT_HOOKS_FILE = '.gatehouse/hooks.yaml';

export const HOOK_TIMEOUT_DEFAULT_S = 10;

const hookSchema = z.strictObject({
  command: z.string({ error: 'must be the command line to run' }).trim().min(1),
  /** How reports name the hook; the command when absent. */
  name: z.string().trim().min(1).max(100).optional(),
  /** before_tool / after_tool only: the tools it runs for (all when absent). */
  tools: z.array(z.string().min(1)).min(1).optional(),
  timeout_s: z
    .number({ error: 'must be a number of seconds' })
    .positive({ error: 'must be more than 0' })
    .max(600, { error: 'must be at most 600 seconds' })
    .default(HOOK_TIMEOUT_DEFAULT_S),
  /** before_tool only: whether a hook that fails or times out lets the call run or blocks it. */
  on_failure: z.enum(['continue', 'block']).default('continue'),
});

export const HOOKS_SCHEMA = z
  .strictObject({
    before_tool: z.array(hookSchema).default([]),
    after_tool: z.array(hookSchema).default([]),
    turn_start: z.array(hookSchema).default([]),
    turn_end: z.array(hookSchema).default([]),
  })
  .superRefine((hooks, ctx) => {
    for (const event of ['turn_start', 'turn_end'] as const) {
      hooks[event].forEach((hook, i) => {
        if (hook.tools !== undefined)
          ctx.addIssue({ code: 'custom', path: [event, i, 'tools'], message: 'only tool hooks name tools' });
      });
    }
  });

export type HookSpec = z.output<typeof hookSchema>;
export type HookSet = z.output<typeof HOOKS_SCHEMA>;

export const NO_HOOKS: HookSet = { before_tool: [], after_tool: [], turn_start: [], turn_end: [] };

export function hookName(hook: HookSpec): string {
  return hook.name ?? (hook.command.length > 60 ? `${hook.command.slice(0, 59)}…` : hook.command);
}

/**
 * The hooks a project declares in its cwd: none when there is no file; a message saying what is
 * wrong (file and key) when it cannot be used.
 */
export async function readProjectHooks(cwd: string): Promise<{ hooks: HookSet } | { error: string }> {
  const file = path.join(cwd, PROJECT_HOOKS_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { hooks: NO_HOOKS };
    return { error: `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? 'unreadable'}` };
  }
  const document = parseDocument(text);
  if (document.errors.length > 0) return { error: `${file} is not valid YAML` };
  const parsed = HOOKS_SCHEMA.safeParse(document.toJS() ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const where = issue.path.map(String).join('.') || '(top level)';
    return { error: `${file}: ${where}: ${issue.message}` };
  }
  return { hooks: parsed.data };
}
