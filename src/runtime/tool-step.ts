/**
 * One tool call inside a turn: find the tool, parse the model's arguments, run it with its context,
 * and stop it on interrupt. Whatever goes wrong becomes a tool result the model is shown (an unknown
 * tool, arguments that are not a JSON object, a tool that throws); nothing here crashes a turn.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ToolCall } from '../domain/vocabulary.js';
import type { ToolContext, ToolDefinition, ToolResult } from './types.js';

/** Opens the result of every tool call an interrupt cut short (the runner and the model look for it). */
export const INTERRUPTED_MARK = '[interrupted before completion]';
export const INTERRUPTED_RESULT = `${INTERRUPTED_MARK} The user interrupted the turn; this tool call did not finish.`;
export const NOT_STARTED_RESULT = `${INTERRUPTED_MARK} The user interrupted the turn before this tool call started.`;

export interface ToolStepResult {
  result: ToolResult;
  durationMs: number;
  /** The turn was interrupted while (or before) this call ran; `result` is the synthetic one. */
  interrupted: boolean;
}

/** Parses a tool call's arguments: an object, or a sentence telling the model what was wrong. */
export function parseToolArguments(name: string, raw: string): Record<string, unknown> | string {
  if (raw.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    const why = error instanceof Error ? error.message : 'invalid JSON';
    return `The arguments for tool "${name}" are not valid JSON (${why}). Call the tool again with one JSON object.`;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return `The arguments for tool "${name}" must be a JSON object, not ${Array.isArray(parsed) ? 'an array' : typeof parsed}.`;
  }
  return parsed as Record<string, unknown>;
}

export async function runToolStep(
  call: ToolCall,
  tools: ReadonlyMap<string, ToolDefinition>,
  context: ToolContext,
  /** How long an interrupted tool may take to clean up before its synthetic result is written. */
  stopGraceMs: number,
): Promise<ToolStepResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const name = call.function.name;
  if (context.signal.aborted) {
    return { result: { content: NOT_STARTED_RESULT, isError: true }, durationMs: 0, interrupted: true };
  }
  const tool = tools.get(name);
  if (!tool) {
    const known = [...tools.keys()].join(', ') || 'none';
    return {
      result: {
        content: `There is no tool named "${name}" in this session. Available tools: ${known}.`,
        isError: true,
      },
      durationMs: elapsed(),
      interrupted: false,
    };
  }
  const args = parseToolArguments(name, call.function.arguments);
  if (typeof args === 'string')
    return { result: { content: args, isError: true }, durationMs: elapsed(), interrupted: false };

  // REC-7 seam: the durable started mark, before anything of the tool runs (unless the tool marks
  // its own start, right before its side effect).
  const running = Promise.resolve()
    .then(() => (tool.marksOwnStart ? undefined : context.markStarted()))
    .then(() => tool.run(args, context))
    .then(
      (result): ToolResult => result,
      (error: unknown): ToolResult => ({
        content: `The tool "${name}" failed: ${error instanceof Error ? error.message : String(error)}`,
        isError: true,
      }),
    );
  const stop = abortion(context.signal);
  try {
    const first = await Promise.race([running, stop.promise]);
    if (first !== ABORTED) return { result: first, durationMs: elapsed(), interrupted: false };
  } finally {
    stop.dispose();
  }
  // Interrupted: give the tool a moment to kill what it started, keep what it had to say.
  const grace = new AbortController();
  const settled = await Promise.race([
    running,
    sleep(stopGraceMs, null, { signal: grace.signal }).catch(() => null),
  ]);
  grace.abort();
  // A tool that says itself how the interrupt ended it (the terminal tool) is not talked over.
  const content = !settled?.content
    ? INTERRUPTED_RESULT
    : settled.content.startsWith(INTERRUPTED_MARK)
      ? settled.content
      : `${INTERRUPTED_RESULT}\n${settled.content}`;
  return { result: { content, isError: true }, durationMs: elapsed(), interrupted: true };
}

const ABORTED = Symbol('aborted');

function abortion(signal: AbortSignal): { promise: Promise<typeof ABORTED>; dispose(): void } {
  let onAbort: () => void = () => undefined;
  const promise = new Promise<typeof ABORTED>((resolve) => {
    onAbort = () => resolve(ABORTED);
    if (signal.aborted) resolve(ABORTED);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

/** A one-line summary of a tool result for the tool.complete event. */
export function summarize(content: string, max = 200): string {
  const line = content.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}…` : line;
}
