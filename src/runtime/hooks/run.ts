/**
 * Runs one hook: `bash -c <command>` in the session's cwd, in its own process group (killed whole on
 * a timeout or an interrupt), with the allow-listed environment tools get (tools/env.ts), and one JSON object on stdin
 * (HookInput). Exit 0 is success; exit 2 from a before_tool hook blocks the call, what the hook
 * printed being the reason; anything else — another exit code, a signal, the timeout, bash that
 * cannot start — is a failure, reported, never silent.
 */
import { runInProcessGroup } from '../tools/process-group.js';
import { toolEnvironment } from '../tools/env.js';
import type { HookEvent, HookSpec } from './config.js';

/** What a hook reads on stdin (docs/hooks.md). Fields that do not apply to the event are absent. */
export interface HookInput {
  event: HookEvent;
  session_id: string;
  admission_id: string | null;
  cwd: string;
  tool_name?: string;
  /** The tool call's arguments, as the model gave them (after_tool and before_tool). */
  arguments?: Record<string, unknown>;
  /** after_tool: what the tool returned. */
  result?: { content: string; is_error: boolean };
  /** turn_end: how the turn ended. */
  outcome?: string;
  final_text?: string | null;
}

export type HookRun =
  | { kind: 'ok' }
  | { kind: 'blocked'; reason: string }
  | { kind: 'failed'; message: string }
  | { kind: 'interrupted' };

/** What a hook may print into a report or a block reason. */
const REASON_MAX = 2000;
const OUTPUT_CAP = 16 * 1024;
const KILL_GRACE_MS = 1000;

export interface HookRunOptions {
  signal: AbortSignal;
  env?: Readonly<Record<string, string>>;
  /** Execs the hook under limits (the safe-mode worker's `prlimit …`). */
  launcher?: readonly string[];
}

/** How a hook is run: here, or in a safe-mode session's worker (isolation/worker-host.ts). */
export type HookExecutor = (hook: HookSpec, input: HookInput, options: HookRunOptions) => Promise<HookRun>;

export async function runHook(hook: HookSpec, input: HookInput, options: HookRunOptions): Promise<HookRun> {
  const result = await runInProcessGroup({
    ...(options.launcher ? { launcher: options.launcher } : {}),
    command: hook.command,
    cwd: input.cwd,
    env: { ...(options.env ?? toolEnvironment(process.env)), GATEHOUSE_HOOK_EVENT: input.event },
    timeoutMs: hook.timeout_s * 1000,
    signal: options.signal,
    outputCapBytes: OUTPUT_CAP,
    killGraceMs: KILL_GRACE_MS,
    stdin: `${JSON.stringify(input)}\n`,
  });
  const said = result.output.trim();
  const printed = said.length > REASON_MAX ? `${said.slice(0, REASON_MAX)}…` : said;
  const t = result.termination;
  switch (t.kind) {
    case 'exited':
      if (t.exitCode === 0) return { kind: 'ok' };
      if (t.exitCode === 2 && input.event === 'before_tool')
        return { kind: 'blocked', reason: printed || 'no reason given' };
      return {
        kind: 'failed',
        message: `exited with code ${t.exitCode}${printed ? `: ${firstLine(printed)}` : ''}`,
      };
    case 'signalled':
      return { kind: 'failed', message: `was killed by signal ${t.signal}` };
    case 'timed_out':
      return { kind: 'failed', message: `timed out after ${hook.timeout_s} s and was stopped` };
    case 'interrupted':
      return { kind: 'interrupted' };
    case 'spawn_failed':
      return { kind: 'failed', message: `could not start: ${t.message}` };
  }
}

function firstLine(text: string): string {
  const line = text.split('\n')[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}
