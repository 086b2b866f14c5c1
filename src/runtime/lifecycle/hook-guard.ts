/**
 * The hooks of a turn: before_tool hooks (which may block the call) and after_tool hooks as a tool
 * guard, and the turn_start / turn_end hooks. Every failure is published (`hook.failed`) and put in
 * the transcript: on the tool's result for tool hooks, as a note the caller stores for turn hooks.
 */
import { hookName, type HookEvent, type HookSet, type HookSpec } from '../hooks/config.js';
import { runHook, type HookExecutor, type HookInput } from '../hooks/run.js';
import { PROCEED, type GuardedCall, type GuardVerdict, type ToolGuard } from '../tool-guards.js';
import type { ToolResult } from '../types.js';
import type { LifecycleScope } from './session-lifecycle.js';

/** A hook with where it was declared. */
export interface OriginHook {
  hook: HookSpec;
  origin: 'home' | 'project';
}

export type OriginHooks = Record<HookEvent, OriginHook[]>;

export function withOrigin(home: HookSet, project: HookSet | null): OriginHooks {
  const tag = (event: HookEvent): OriginHook[] => [
    ...home[event].map((hook) => ({ hook, origin: 'home' as const })),
    ...(project?.[event] ?? []).map((hook) => ({ hook, origin: 'project' as const })),
  ];
  return {
    before_tool: tag('before_tool'),
    after_tool: tag('after_tool'),
    turn_start: tag('turn_start'),
    turn_end: tag('turn_end'),
  };
}

function where(origin: OriginHook['origin']): string {
  return origin === 'home' ? 'config.yaml' : 'the project';
}

export class HookRunner {
  constructor(
    private readonly hooks: OriginHooks,
    private readonly scope: LifecycleScope,
    private readonly env?: Readonly<Record<string, string>>,
    private readonly run: HookExecutor = runHook,
  ) {}

  get any(): boolean {
    return Object.values(this.hooks).some((list) => list.length > 0);
  }

  guard(): ToolGuard {
    return {
      before: (call) => this.beforeTool(call),
      after: (call, result) => this.afterTool(call, result),
    };
  }

  /** Runs the turn hooks of `event`; returns one transcript note per failure. */
  async turn(event: 'turn_start' | 'turn_end', extra: Partial<HookInput>, signal: AbortSignal) {
    const notes: string[] = [];
    for (const entry of this.hooks[event]) {
      const run = await this.run(entry.hook, this.input(event, extra), { signal, ...this.envOption() });
      if (run.kind === 'failed' || run.kind === 'blocked') {
        const message =
          run.kind === 'failed' ? run.message : 'exited with code 2 (only before_tool hooks block)';
        notes.push(this.failed(event, entry, message));
      }
      if (run.kind === 'interrupted') break;
    }
    return notes;
  }

  private async beforeTool(call: GuardedCall): Promise<GuardVerdict> {
    const tool = call.tool.name;
    const notes: string[] = [];
    for (const entry of this.matching('before_tool', tool)) {
      const input = this.input('before_tool', { tool_name: tool, arguments: call.args });
      const run = await this.run(entry.hook, input, { signal: call.context.signal, ...this.envOption() });
      if (run.kind === 'interrupted') return PROCEED; // the guarded tool sees the abort and stops
      const name = hookName(entry.hook);
      if (run.kind === 'blocked') {
        this.scope.publish({
          type: 'hook.blocked',
          hook: name,
          origin: entry.origin,
          tool_name: tool,
          reason: run.reason,
        });
        return {
          proceed: false,
          result: blockedResult(
            `Blocked by the before_tool hook "${name}" (${where(entry.origin)}): ${run.reason}`,
          ),
        };
      }
      if (run.kind === 'failed') {
        const note = this.failed('before_tool', entry, run.message, tool);
        if (entry.hook.on_failure === 'block') {
          return { proceed: false, result: blockedResult(`${note} It blocks the call when it fails.`) };
        }
        notes.push(note);
      }
    }
    return { proceed: true, notes };
  }

  private async afterTool(call: GuardedCall, result: ToolResult): Promise<string[]> {
    const tool = call.tool.name;
    const notes: string[] = [];
    for (const entry of this.matching('after_tool', tool)) {
      const input = this.input('after_tool', {
        tool_name: tool,
        arguments: call.args,
        result: { content: result.content, is_error: result.isError === true },
      });
      const run = await this.run(entry.hook, input, { signal: call.context.signal, ...this.envOption() });
      if (run.kind === 'interrupted') break;
      if (run.kind !== 'ok') {
        const message =
          run.kind === 'failed' ? run.message : 'exited with code 2 (only before_tool hooks block)';
        notes.push(this.failed('after_tool', entry, message, tool));
      }
    }
    return notes;
  }

  private matching(event: 'before_tool' | 'after_tool', tool: string): OriginHook[] {
    return this.hooks[event].filter((e) => e.hook.tools === undefined || e.hook.tools.includes(tool));
  }

  private input(event: HookEvent, extra: Partial<HookInput>): HookInput {
    return {
      event,
      session_id: this.scope.sessionId,
      admission_id: this.scope.admissionId ?? null,
      cwd: this.scope.cwd,
      ...extra,
    };
  }

  /** Publishes a failure and returns its sentence for the transcript. */
  private failed(event: HookEvent, entry: OriginHook, message: string, tool?: string): string {
    const name = hookName(entry.hook);
    this.scope.publish({
      type: 'hook.failed',
      event,
      hook: name,
      origin: entry.origin,
      message,
      ...(tool === undefined ? {} : { tool_name: tool }),
    });
    return `The ${event} hook "${name}" (${where(entry.origin)}) failed: it ${message}.`;
  }

  private envOption(): { env?: Readonly<Record<string, string>> } {
    return this.env === undefined ? {} : { env: this.env };
  }
}

function blockedResult(reason: string): ToolResult {
  return { content: `${reason}\nThe tool call did not run.`, isError: true };
}
