/**
 * The typed IPC protocol between the daemon and a safe-mode worker (docs/tools.md, "Safe mode").
 * The daemon keeps the model, the transcript and every human prompt; the worker runs the tools that
 * touch the machine and asks the daemon whenever a tool needs a human (approval, clarify).
 *
 * Each tool call has a number (`call`) chosen by the daemon; each question a call asks has a
 * number (`ask`) chosen by the worker. Messages travel over Node's IPC channel as JSON.
 */
import type {
  ApprovalOutcome,
  ApprovalRequest,
  ClarifyOutcome,
  ClarifyRequest,
  ToolResult,
} from '../types.js';
import type { ToolProgress } from '../tools/progress.js';

/** The tools a safe-mode session runs in its worker: those that touch files or start processes. */
export const ISOLATED_TOOLS: readonly string[] = ['terminal', 'read_file', 'list_directory', 'write_file'];

/**
 * Not a tool the model sees: a safe-mode session's hook, run by its worker like a tool call
 * (arguments `{hook, input, timeout_s}`, result content the HookRun as JSON).
 */
export const WORKER_HOOK = 'hook';

/** Daemon → worker. */
export type HostMessage =
  | {
      type: 'run';
      call: number;
      tool: string;
      args: Record<string, unknown>;
      cwd: string;
      session_id: string;
      admission_id: string | null;
      execution_generation: number;
      yolo: boolean;
    }
  | { type: 'abort'; call: number }
  | { type: 'approval.answer'; call: number; ask: number; outcome: ApprovalOutcome }
  | { type: 'clarify.answer'; call: number; ask: number; outcome: ClarifyOutcome }
  /** The started mark is durable (`error` null), or could not be written: then nothing may run. */
  | { type: 'started.answer'; call: number; ask: number; error: string | null };

/** Worker → daemon. */
export type WorkerMessage =
  | { type: 'progress'; call: number; progress: ToolProgress }
  | { type: 'approval.ask'; call: number; ask: number; request: ApprovalRequest }
  | { type: 'clarify.ask'; call: number; ask: number; request: ClarifyRequest }
  /** REC-7: the tool is about to start its side effect; the daemon records that durably first. */
  | { type: 'started.ask'; call: number; ask: number }
  | { type: 'result'; call: number; result: ToolResult };

/** What the daemon tells a worker at start (its argv[2], JSON). */
export interface WorkerSettings {
  /** Prefix that execs each command under the rlimits (`prlimit …`). */
  launcher: string[];
  /** The worker's pids cgroup, whose leftover members it stops after each call; null without one. */
  cgroup: string | null;
}

/** A message from the worker the daemon can act on, or null for anything malformed. */
export function parseWorkerMessage(raw: unknown): WorkerMessage | null {
  if (raw === null || typeof raw !== 'object') return null;
  const m = raw as Record<string, unknown>;
  if (typeof m['call'] !== 'number') return null;
  switch (m['type']) {
    case 'progress':
      return typeof m['progress'] === 'object' && m['progress'] !== null ? (m as WorkerMessage) : null;
    case 'approval.ask':
    case 'clarify.ask':
      return typeof m['ask'] === 'number' && typeof m['request'] === 'object' ? (m as WorkerMessage) : null;
    case 'started.ask':
      return typeof m['ask'] === 'number' ? (m as WorkerMessage) : null;
    case 'result': {
      const result = m['result'] as Record<string, unknown> | null;
      return result && typeof result['content'] === 'string' ? (m as WorkerMessage) : null;
    }
    default:
      return null;
  }
}
