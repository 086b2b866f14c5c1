/** Shared test wiring: a temp cwd, a turn scope that records events, and a ToolContext over a broker. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import type { ToolContext, TurnEvent, TurnScope } from '../../../src/runtime/types.js';

export function tempDir(prefix = 'gh-tools-'): string {
  return fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
}

export interface Harness {
  scope: TurnScope;
  events: TurnEvent[];
  controller: AbortController;
  context: ToolContext;
}

export function harness(
  broker: PromptBroker,
  options: { cwd: string; sessionId?: string; generation?: number; yolo?: boolean },
): Harness {
  const events: TurnEvent[] = [];
  const controller = new AbortController();
  const scope: TurnScope = {
    sessionId: options.sessionId ?? 'ses_test',
    admissionId: 'adm_test',
    executionGeneration: options.generation ?? 1,
    signal: controller.signal,
    emit: (event) => events.push(event),
  };
  const context: ToolContext = {
    cwd: options.cwd,
    signal: controller.signal,
    sessionId: scope.sessionId,
    admissionId: scope.admissionId,
    executionGeneration: scope.executionGeneration,
    yolo: options.yolo ?? false,
    requestApproval: (request) => broker.requestApproval(scope, request),
    askClarify: (request) => broker.askClarify(scope, request),
    markStarted: () => Promise.resolve(),
  };
  return { scope, events, controller, context };
}

/** A process that exists and is not a zombie waiting to be reaped (PID 1 here may not reap). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export function readPids(file: string): number[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map(Number);
}
