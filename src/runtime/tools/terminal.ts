/**
 * The `terminal` tool (SPEC RUN-2): runs a command with `bash -c` in the session's cwd, in its own
 * process group, with a timeout, an output cap and an allow-listed environment (env.ts). A command the detector
 * calls dangerous waits for a human's approval unless the session is yolo (SPEC RUN-3).
 */
import { assessCommand } from '../approvals/assess.js';
import { preloadBashParser } from '../approvals/bash-tree.js';
import { INTERRUPTED_MARK } from '../tool-step.js';
import type { ApprovalOutcome, ToolContext, ToolDefinition, ToolResult } from '../types.js';
import { toolEnvironment } from './env.js';
import { runInProcessGroup, type RunResult } from './process-group.js';
import { ProgressReporter } from './progress.js';

export interface TerminalOptions {
  /** Used when the model gives no timeout_s. */
  defaultTimeoutS?: number;
  /** A larger timeout_s is lowered to this (and the result says so). */
  maxTimeoutS?: number;
  /** Output kept per call, head + tail. */
  outputCapBytes?: number;
  /** Between SIGTERM and SIGKILL when the group is stopped. */
  killGraceMs?: number;
  /** The command's whole environment; by default the allow-list of env.ts over the gateway's own. */
  env?: Readonly<Record<string, string>>;
  /** Execs the command under limits (the isolated worker's `prlimit …`); see process-group.ts. */
  launcher?: readonly string[];
}

const processListeners = new Set<() => void>();

/**
 * Told each time a terminal command's process exists in this process (spawned; a safe-mode
 * command runs in its worker's process instead). Only the crash tests' `tool.running` fault point
 * listens (src/daemon/faults.ts): it kills the daemon while the command really runs.
 */
export function onTerminalProcess(listener: () => void): () => void {
  processListeners.add(listener);
  return () => processListeners.delete(listener);
}

export const TERMINAL_DEFAULTS = {
  defaultTimeoutS: 120,
  maxTimeoutS: 600,
  outputCapBytes: 64 * 1024,
  killGraceMs: 2000,
} as const;

function fail(content: string): ToolResult {
  return { content, isError: true };
}

/** Why an approval ended without permission, in words that never confuse a timeout with a "no". */
function notApproved(outcome: Exclude<ApprovalOutcome, { kind: 'approved' }>): ToolResult {
  switch (outcome.kind) {
    case 'denied':
      return fail(
        outcome.by === 'config'
          ? 'Denied by configuration (approvals.mode: deny): this command needs an approval, and this gateway refuses every command that does. It was not run.'
          : 'The user denied this command. It was not run.',
      );
    case 'timeout':
      return fail('Nobody answered the approval request in time. The command was not run.');
    case 'cancelled':
      return fail('Interrupted while waiting for approval. The command was not run.');
  }
}

function describe(result: RunResult, timeoutS: number): { status: string; isError: boolean } {
  const t = result.termination;
  switch (t.kind) {
    case 'exited':
      return { status: `exit code ${t.exitCode}`, isError: t.exitCode !== 0 };
    case 'signalled':
      return { status: `killed by signal ${t.signal}`, isError: true };
    case 'timed_out':
      return { status: `timed out after ${timeoutS} s; the whole process group was killed`, isError: true };
    case 'interrupted':
      return { status: 'interrupted', isError: true }; // interruptedResult says it in full
    case 'spawn_failed':
      return { status: `could not start bash: ${t.message}`, isError: true };
  }
}

export function createTerminalTool(options: TerminalOptions = {}): ToolDefinition {
  const settings = { ...TERMINAL_DEFAULTS, ...options };
  return {
    name: 'terminal',
    toolset: 'terminal',
    changesFiles: true,
    // Every command is read with bash's grammar before it runs (the allow-list): a turn that may
    // run one starts loading it while the model is asked. An idle daemon never loads it (13 MiB).
    prepare: preloadBashParser,
    description:
      'Run a shell command with bash in the session working directory and return its exit code and ' +
      `combined output (capped at ${settings.outputCapBytes} bytes). Commands that could cause damage ` +
      'wait for the user to approve them. Background processes are stopped when the command ends.',
    parameters: {
      type: 'object',
      properties: {
        command: { type: 'string', description: 'The command line, run as `bash -c <command>`.' },
        timeout_s: {
          type: 'number',
          description: `Seconds before the command is killed (default ${settings.defaultTimeoutS}, at most ${settings.maxTimeoutS}).`,
        },
      },
      required: ['command'],
      additionalProperties: false,
    },
    marksOwnStart: true,
    async run(args, context) {
      const command = args.command;
      if (typeof command !== 'string' || command.trim() === '') {
        return fail('`command` must be a non-empty string.');
      }
      const requested = args.timeout_s;
      if (requested !== undefined && (typeof requested !== 'number' || !(requested > 0))) {
        return fail('`timeout_s` must be a positive number of seconds.');
      }
      const timeoutS = Math.min(requested ?? settings.defaultTimeoutS, settings.maxTimeoutS);
      const notes: string[] = [];
      if (requested !== undefined && requested > settings.maxTimeoutS) {
        notes.push(`timeout_s lowered to the maximum of ${settings.maxTimeoutS} s`);
      }

      const refusal = await approve(command, context);
      if (refusal !== null) return refusal;
      if (context.signal.aborted) return notApproved({ kind: 'cancelled' });

      const progress = context.reportProgress
        ? new ProgressReporter((p) => context.reportProgress?.(p))
        : null;
      // REC-7: durably started before the process exists; a crash from here on is never re-run.
      await context.markStarted();
      const result = await runInProcessGroup({
        command,
        cwd: context.cwd,
        env: { ...(settings.env ?? toolEnvironment(process.env)) },
        timeoutMs: timeoutS * 1000,
        signal: context.signal,
        outputCapBytes: settings.outputCapBytes,
        killGraceMs: settings.killGraceMs,
        ...(settings.launcher ? { launcher: settings.launcher } : {}),
        ...(progress ? { onOutput: (chunk: Buffer) => progress.push(chunk) } : {}),
        onSpawn: () => {
          for (const listener of [...processListeners]) listener();
        },
      }).finally(() => progress?.stop());
      if (result.termination.kind === 'interrupted') return interruptedResult(result.output, notes);
      const { status, isError } = describe(result, timeoutS);
      if (result.strayStopped)
        notes.push('background processes still running when the command ended were stopped');
      const lines = [status, ...notes.map((n) => `note: ${n}`)];
      lines.push(result.output === '' ? '(no output)' : `output:\n${result.output}`);
      return { content: lines.join('\n'), isError };
    },
  };
}

/**
 * An interrupted command in one sentence (what the chat shows as its one-line summary), then
 * whatever it printed until then for the model.
 */
export function interruptedResult(output: string, notes: readonly string[] = []): ToolResult {
  const stopped = `${INTERRUPTED_MARK} The user interrupted the turn; the command was stopped, with everything it started`;
  const lines = [
    output === '' ? `${stopped}, before it printed anything.` : `${stopped}. Its output until then:`,
    ...(output === '' ? [] : [output]),
    ...notes.map((n) => `note: ${n}`),
  ];
  return { content: lines.join('\n'), isError: true };
}

/**
 * null when the command may run; otherwise the result that explains why it did not. What the
 * allow-list proves safe runs; everything else goes to the broker, which decides by the mode.
 */
async function approve(command: string, context: ToolContext): Promise<ToolResult | null> {
  const assessment = await assessCommand(command, context.cwd);
  if (assessment.allowListed) return null;
  const outcome = await context.requestApproval({
    kind: 'command',
    command,
    reason: assessment.reason,
    cwd: context.cwd,
    gate: { yolo: context.yolo, flagged: assessment.flagged },
  });
  return outcome.kind === 'approved' ? null : notApproved(outcome);
}

export const terminalTool: ToolDefinition = createTerminalTool();
