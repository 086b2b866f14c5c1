/**
 * A turn's flight recorder (issue 31 item 1): what a turn did, step by step, read from the stored
 * records only — its admission row (admitted, started, settled, outcome, resumes after a crash), the
 * transcript messages it stored (each model answer, each tool call with its outcome and the
 * approval it ran under), the compressions of the session's lineage made while it ran, and its
 * cost row (tokens, cost). So it reads the same after a restart. Pure: the caller reads the records.
 *
 * Times come from the stored timestamps: a model step's duration is the time from the step before
 * it to its stored answer; a tool's, from the call to its stored result.
 */
import { GATEWAY_STOP_MARKER } from '../../runtime/transcript-repair.js';
import type { TurnRecord } from '../ports/local-store.js';
import type { StoredMessage } from '../ports/session-store.js';
import type { LineageStep } from './receipt.js';

/** `running`: no result yet and the turn still runs; `unknown`: none, and the turn stopped (a crash). */
export type ToolVerdict = 'succeeded' | 'failed' | 'denied' | 'interrupted' | 'running' | 'unknown';

export type TimelineEvent =
  | { kind: 'admitted'; at: string }
  | { kind: 'started'; at: string; queue_wait_ms: number }
  | { kind: 'model'; at: string; duration_ms: number | null; text: string | null; tool_calls: string[] }
  | {
      kind: 'tool';
      at: string | null;
      tool_call_id: string;
      name: string;
      command: string;
      outcome: ToolVerdict;
      approval: string | null;
      duration_ms: number | null;
      output: string | null;
    }
  | { kind: 'compression'; at: string; method: string }
  | { kind: 'interrupted'; at: string }
  /** Placed after the step a restart interrupted; `step`: the model step the turn went on with. */
  | { kind: 'resumed'; resumes: number; step: number }
  /** Placed after the call whose effect is unknown; `step`: the model step it belonged to. */
  | { kind: 'unknown'; detail: string | null; step: number }
  | { kind: 'settled'; at: string; outcome: string; detail: string | null };

export interface TurnTimeline {
  admission_id: string;
  text: string;
  state: string;
  admitted_at: string;
  started_at: string | null;
  settled_at: string | null;
  queue_wait_ms: number | null;
  duration_ms: number | null;
  resumes: number;
  tokens: { input: number; output: number; cache_read: number } | null;
  cost: { usd: number; status: string; provider: string; model: string } | null;
  events: TimelineEvent[];
}

const OUTPUT_MAX = 2000;

const ms = (from: string | null, to: string | null): number | null =>
  from === null || to === null ? null : Math.max(0, Date.parse(to) - Date.parse(from));

function commandOf(args: string): string {
  try {
    const parsed = JSON.parse(args) as Record<string, unknown>;
    return typeof parsed['command'] === 'string' ? parsed['command'] : args;
  } catch {
    return args;
  }
}

function verdict(result: StoredMessage | undefined, live: boolean): ToolVerdict {
  if (!result) return live ? 'running' : 'unknown';
  const approval = result.tool_outcome?.approval;
  if (approval === 'denied' || approval === 'timeout' || approval === 'cancelled') return 'denied';
  if (result.content?.startsWith(GATEWAY_STOP_MARKER) || result.interrupted) return 'interrupted';
  return result.tool_outcome?.is_error ? 'failed' : 'succeeded';
}

/** One turn's timeline from its record, the session's stored messages and its lineage steps. */
export function turnTimeline(
  record: TurnRecord,
  messages: readonly StoredMessage[],
  steps: readonly LineageStep[],
): TurnTimeline {
  const a = record.admission;
  const own = messages.filter((m) => m.admission_id === a.admission_id);
  const results = new Map(
    own.filter((m) => m.role === 'tool' && m.tool_call_id).map((m) => [m.tool_call_id!, m]),
  );
  const events: TimelineEvent[] = [{ kind: 'admitted', at: a.admitted_at }];
  if (a.started_at)
    events.push({ kind: 'started', at: a.started_at, queue_wait_ms: ms(a.admitted_at, a.started_at)! });
  let previous = a.started_at;
  for (const m of own) {
    if (m.role === 'assistant') {
      events.push({
        kind: 'model',
        at: m.timestamp,
        duration_ms: ms(previous, m.timestamp),
        text: m.content,
        tool_calls: (m.tool_calls ?? []).map((c) => c.function.name),
      });
      previous = m.timestamp;
      for (const call of m.tool_calls ?? []) {
        const result = results.get(call.id);
        events.push({
          kind: 'tool',
          at: result?.timestamp ?? null,
          tool_call_id: call.id,
          name: call.function.name,
          command: commandOf(call.function.arguments),
          outcome: verdict(result, a.state === 'running'),
          approval: result?.tool_outcome?.approval ?? null,
          duration_ms: ms(m.timestamp, result?.timestamp ?? null),
          output: result?.content?.slice(0, OUTPUT_MAX) ?? null,
        });
        if (result) previous = result.timestamp;
      }
    }
    if (m.interrupted) events.push({ kind: 'interrupted', at: m.timestamp });
  }
  for (const step of steps) {
    const during =
      step.kind === 'compression' &&
      a.started_at !== null &&
      step.at >= a.started_at &&
      (a.settled_at === null || step.at <= a.settled_at);
    if (!during) continue;
    // In its place among the stored steps (their times are in order already).
    const later = events.findIndex((e) => 'at' in e && e.at !== null && e.at > step.at);
    const event: TimelineEvent = { kind: 'compression', at: step.at, method: step.method ?? 'summary' };
    events.splice(later < 0 ? events.length : later, 0, event);
  }
  // Crash markers where they happened: after the last interrupted (or unknown) step, else at the end.
  const after = (outcome: ToolVerdict): number => {
    const i = events.findLastIndex((e) => e.kind === 'tool' && e.outcome === outcome);
    return i < 0 ? events.length : i + 1;
  };
  const modelSteps = (upTo: number): number => events.slice(0, upTo).filter((e) => e.kind === 'model').length;
  if (a.resumes > 0) {
    const at = after('interrupted');
    events.splice(at, 0, { kind: 'resumed', resumes: a.resumes, step: modelSteps(at) + 1 });
  }
  if (a.state === 'unknown') {
    const at = after('unknown');
    events.splice(at, 0, { kind: 'unknown', detail: a.detail, step: Math.max(1, modelSteps(at)) });
  }
  if (a.settled_at) events.push({ kind: 'settled', at: a.settled_at, outcome: a.state, detail: a.detail });
  const c = record.cost;
  return {
    admission_id: a.admission_id,
    text: a.text,
    state: a.state,
    admitted_at: a.admitted_at,
    started_at: a.started_at,
    settled_at: a.settled_at,
    queue_wait_ms: ms(a.admitted_at, a.started_at),
    duration_ms: ms(a.started_at, a.settled_at),
    resumes: a.resumes,
    tokens: c ? { input: c.input_tokens, output: c.output_tokens, cache_read: c.cache_read_tokens } : null,
    cost: c ? { usd: c.cost_usd, status: c.cost_status, provider: c.provider, model: c.model } : null,
    events,
  };
}
