/**
 * What runs around one turn of a session besides the model and its tools: checkpoints (when the
 * session was created with `checkpoints: true`) and hooks (the home's, plus the project's when it
 * was created with `accept_hooks: true`). The turn job opens one TurnLifecycle per turn, wraps the
 * turn's tools with its guards, and stores the notes turnStart/turnEnd return in the transcript.
 */
import type { HookExecutor } from '../hooks/run.js';
import type { CheckpointStore } from '../checkpoints/store.js';
import { NO_HOOKS, PROJECT_HOOKS_FILE, readProjectHooks, type HookSet } from '../hooks/config.js';
import type { ToolGuard } from '../tool-guards.js';
import { checkpointGuard } from './checkpoint-guard.js';
import { HookRunner, withOrigin } from './hook-guard.js';

/** The turn a lifecycle belongs to. */
export interface LifecycleScope {
  /** Logical session id. */
  sessionId: string;
  admissionId: string | undefined;
  cwd: string;
  /** Publishes an event to the session's viewers. */
  publish(event: { type: string; [field: string]: unknown }): void;
}

export interface LifecyclePolicy {
  checkpoints: boolean;
  acceptHooks: boolean;
}

export interface LifecycleDeps {
  checkpoints: CheckpointStore;
  /** The `hooks` section of the home's config.yaml. */
  homeHooks: HookSet;
  /** The whole environment hooks are given (tools/env.ts); the allow-list over the daemon's by default. */
  env?: Readonly<Record<string, string>>;
  /** Runs each hook; by default here (a safe-mode session's go to its worker). */
  runHook?: HookExecutor;
}

export interface TurnLifecycle {
  /** Around every tool call of the turn, in this order: hooks, then the checkpoint. */
  readonly guards: readonly ToolGuard[];
  /** Runs the turn_start hooks; returns the sentences to store in the transcript (failures). */
  turnStart(signal: AbortSignal): Promise<string[]>;
  turnEnd(end: { outcome: string; final_text: string | null }, signal: AbortSignal): Promise<string[]>;
}

export async function openTurnLifecycle(
  deps: LifecycleDeps,
  policy: LifecyclePolicy,
  scope: LifecycleScope,
): Promise<TurnLifecycle> {
  const pending: string[] = [];
  let project: HookSet | null = null;
  if (policy.acceptHooks) {
    const read = await readProjectHooks(scope.cwd);
    if ('error' in read) {
      scope.publish({
        type: 'hook.failed',
        event: 'turn_start',
        hook: PROJECT_HOOKS_FILE,
        origin: 'project',
        message: read.error,
      });
      pending.push(`The project's hooks were not run this turn: ${read.error}.`);
    } else project = read.hooks;
  }
  const hooks = new HookRunner(
    withOrigin(deps.homeHooks ?? NO_HOOKS, project),
    scope,
    deps.env,
    deps.runHook,
  );
  const guards: ToolGuard[] = [];
  if (hooks.any) guards.push(hooks.guard());
  if (policy.checkpoints) guards.push(checkpointGuard(deps.checkpoints, scope));
  return {
    guards,
    async turnStart(signal) {
      return [...pending.splice(0), ...(await hooks.turn('turn_start', {}, signal))];
    },
    turnEnd(end, signal) {
      return hooks.turn('turn_end', { outcome: end.outcome, final_text: end.final_text }, signal);
    },
  };
}
