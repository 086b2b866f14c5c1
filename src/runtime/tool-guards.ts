/**
 * The seam around every tool call of a turn: guards run before a tool (and may stop it) and after
 * it (and may add notes). Checkpoints and hooks are guards (runtime/lifecycle/). The tools a turn
 * is given are wrapped once with guardTools, so the runner and the tool step call a tool exactly as
 * before: its name, schema and description are unchanged, and whatever a guard has to say reaches
 * the model and the transcript as `note:` lines of the tool's result.
 */
import type { ToolContext, ToolDefinition, ToolResult } from './types.js';

export interface GuardedCall {
  tool: ToolDefinition;
  args: Record<string, unknown>;
  context: ToolContext;
}

export type GuardVerdict =
  /** The call goes on; notes are added to its result. */
  | { proceed: true; notes: string[] }
  /** The call does not run; `result` is what the model is shown instead. */
  | { proceed: false; result: ToolResult };

export interface ToolGuard {
  before(call: GuardedCall): Promise<GuardVerdict>;
  /** Not called when the call was blocked or interrupted. Returns notes for the result. */
  after?(call: GuardedCall, result: ToolResult): Promise<string[]>;
}

export const PROCEED: GuardVerdict = { proceed: true, notes: [] };

/** The tools with the guards around each call, in order; no guards: the tools themselves. */
export function guardTools(tools: readonly ToolDefinition[], guards: readonly ToolGuard[]): ToolDefinition[] {
  if (guards.length === 0) return [...tools];
  return tools.map((tool) => ({
    ...tool,
    run: async (args, context) => {
      const call: GuardedCall = { tool, args, context };
      const notes: string[] = [];
      for (const guard of guards) {
        const verdict = await guard.before(call);
        if (!verdict.proceed) return withNotes(verdict.result, notes);
        notes.push(...verdict.notes);
        if (context.signal.aborted) {
          return withNotes({ content: 'Interrupted before the tool started.', isError: true }, notes);
        }
      }
      const result = await tool.run(args, context);
      if (!context.signal.aborted) {
        for (const guard of guards) if (guard.after) notes.push(...(await guard.after(call, result)));
      }
      return withNotes(result, notes);
    },
  }));
}

function withNotes(result: ToolResult, notes: readonly string[]): ToolResult {
  if (notes.length === 0) return result;
  return { ...result, content: [result.content, ...notes.map((n) => `note: ${n}`)].join('\n') };
}
