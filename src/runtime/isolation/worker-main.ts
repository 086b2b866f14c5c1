/**
 * The safe-mode worker process (docs/tools.md, "Safe mode"): started by the daemon with a minimal
 * environment, in its own working directory, pids cgroup and (where the kernel allows) network
 * namespace. It runs the tools that touch the machine and nothing else: no model, no store, no
 * secrets. Every command it starts is exec'd under the rlimits by `settings.launcher`.
 *
 * It lives as long as its IPC channel: when the daemon goes away (or releases it) it exits.
 */
import process from 'node:process';
import { preloadBashParser } from '../approvals/bash-tree.js';
import { createTerminalTool } from '../tools/terminal.js';
import { projectTools } from '../tools/project.js';
import type { ApprovalOutcome, ClarifyOutcome, ToolContext, ToolDefinition, ToolResult } from '../types.js';
import { drainCgroup, killCgroupMembers } from './limits.js';
import { WORKER_HOOK, type HostMessage, type WorkerMessage, type WorkerSettings } from './protocol.js';
import { runHook, type HookInput } from '../hooks/run.js';
import type { HookSpec } from '../hooks/config.js';

function workerEnvironment(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  return env;
}

const settings = JSON.parse(process.argv[2] ?? '{}') as WorkerSettings;
preloadBashParser();
/** The session's hooks run here too, under the same limits, environment and network namespace. */
const hookTool: ToolDefinition = {
  name: WORKER_HOOK,
  toolset: 'hooks',
  description: 'a hook of the session (never offered to the model)',
  parameters: { type: 'object', properties: {} },
  async run(args, context) {
    const run = await runHook(args['hook'] as HookSpec, args['input'] as HookInput, {
      signal: context.signal,
      env: workerEnvironment(),
      launcher: settings.launcher,
    });
    return { content: JSON.stringify(run) };
  },
};

const tools = new Map<string, ToolDefinition>(
  // The worker's environment is already the tool environment (worker-host.ts): passed on whole.
  [
    createTerminalTool({ launcher: settings.launcher, env: workerEnvironment() }),
    ...projectTools,
    hookTool,
  ].map((t) => [t.name, t]),
);

interface Running {
  abort: AbortController;
  answers: Map<number, (outcome: never) => void>;
}
const running = new Map<number, Running>();
let nextAsk = 1;

function send(message: WorkerMessage): void {
  process.send?.(message);
}

function ask<T>(entry: Running, message: (ask: number) => WorkerMessage): Promise<T> {
  const id = nextAsk++;
  return new Promise<T>((resolve) => {
    entry.answers.set(id, resolve);
    send(message(id));
  });
}

async function run(message: Extract<HostMessage, { type: 'run' }>): Promise<void> {
  const entry: Running = { abort: new AbortController(), answers: new Map() };
  running.set(message.call, entry);
  const tool = tools.get(message.tool);
  const context: ToolContext = {
    cwd: message.cwd,
    signal: entry.abort.signal,
    sessionId: message.session_id,
    admissionId: message.admission_id ?? undefined,
    executionGeneration: message.execution_generation,
    yolo: message.yolo,
    requestApproval: (request) =>
      ask<ApprovalOutcome>(entry, (id) => ({
        type: 'approval.ask',
        call: message.call,
        ask: id,
        request,
      })),
    askClarify: (request) =>
      ask<ClarifyOutcome>(entry, (id) => ({
        type: 'clarify.ask',
        call: message.call,
        ask: id,
        request,
      })),
    reportProgress: (progress) => send({ type: 'progress', call: message.call, progress }),
    // The daemon writes the started mark; a refusal rejects, and the tool then runs nothing.
    markStarted: async () => {
      const error = await ask<string | null>(entry, (id) => ({
        type: 'started.ask',
        call: message.call,
        ask: id,
      }));
      if (error !== null) throw new Error(error);
    },
  };
  let result: ToolResult;
  try {
    result = tool
      ? await tool.run(message.args, context)
      : { content: `The tool "${message.tool}" does not run in the isolated worker.`, isError: true };
  } catch (error) {
    result = {
      content: `The tool "${message.tool}" failed: ${error instanceof Error ? error.message : String(error)}`,
      isError: true,
    };
  }
  // Whatever a command left behind (a fork bomb's children, a process that left its group), and
  // until they are reaped, so the next command can fork.
  if (settings.cgroup) await drainCgroup(settings.cgroup, process.pid);
  running.delete(message.call);
  send({ type: 'result', call: message.call, result });
}

process.on('message', (raw: HostMessage) => {
  switch (raw.type) {
    case 'run':
      void run(raw);
      break;
    case 'abort':
      running.get(raw.call)?.abort.abort();
      break;
    case 'approval.answer':
    case 'clarify.answer':
    case 'started.answer': {
      const entry = running.get(raw.call);
      const answer = entry?.answers.get(raw.ask);
      entry?.answers.delete(raw.ask);
      (answer as ((outcome: unknown) => void) | undefined)?.(
        raw.type === 'started.answer' ? raw.error : raw.outcome,
      );
      break;
    }
  }
});
// The daemon is gone or released us: stop what runs, then exit.
process.on('disconnect', () => {
  for (const entry of running.values()) entry.abort.abort();
  if (settings.cgroup) killCgroupMembers(settings.cgroup, process.pid);
  process.exit(0);
});
