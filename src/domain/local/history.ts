/**
 * A local session's history across its lineage (`session.history`, `gatehouse sessions --show`):
 * every physical transcript the logical session went through, joined without the messages a
 * compression copied verbatim into its child (the head before the summary, the tail after it).
 * Pure: the caller loads the transcripts.
 */
import { isSummaryMessage } from '../../runtime/context/compress.js';
import type { TranscriptMessage } from '../vocabulary.js';
import type { SessionStore } from '../ports/session-store.js';
import { JsonText } from '../json-text.js';
import type { CreationReceipt, LineageStep } from './receipt.js';
import { systemPromptFor } from './turn-job.js';
import { wholeTranscript, type ReplyOptions } from './whole-transcript.js';

/** Whether `copy` is `original` copied into a child (a tool output may have been cut to a stub). */
function same(original: TranscriptMessage, copy: TranscriptMessage): boolean {
  if (original.role === 'tool' && copy.role === 'tool' && original.tool_call_id !== undefined)
    return original.tool_call_id === copy.tool_call_id;
  return original.role === copy.role && original.content === copy.content;
}

/** How many messages after the child's summary repeat the end of the parent. */
function copiedTail(parent: readonly TranscriptMessage[], after: readonly TranscriptMessage[]): number {
  for (let k = Math.min(parent.length, after.length); k > 0; k--) {
    const tail = parent.slice(parent.length - k);
    if (tail.every((m, i) => same(m, after[i]!))) return k;
  }
  return 0;
}

/**
 * How many messages at the start of `after` (what follows a child's summary) are copies: the
 * parent's tail, or, after a compression inside a tool loop, the turn's question followed by the
 * loop's most recent steps (compress.ts inTurnPlan).
 */
function copiedPart(parent: readonly TranscriptMessage[], after: readonly TranscriptMessage[]): number {
  const tail = copiedTail(parent, after);
  if (tail > 0 || after[0]?.role !== 'user' || !parent.some((m) => same(m, after[0]!))) return tail;
  return 1 + copiedTail(parent, after.slice(1));
}

/**
 * Where a lineage step begins in the full history (`sessions --show` draws a line there): at
 * `index`, the first message after the step; a compression's counts are the transcript before
 * and after it (issue 26 item 3).
 */
export interface HistoryBoundary {
  index: number;
  kind: LineageStep['kind'];
  at: string;
  messages_before?: number;
  messages_after?: number;
  method?: 'summary' | 'dropped';
}

/**
 * `transcripts[0]` is the first physical transcript, `transcripts[i]` the one lineage step i-1 led
 * to. A compression contributes its summary and what came after its copied tail; a reset starts
 * over, so its transcript follows whole.
 */
export function fullHistory(
  lineage: readonly LineageStep[],
  transcripts: readonly (readonly TranscriptMessage[])[],
): { messages: TranscriptMessage[]; boundaries: HistoryBoundary[] } {
  const out: TranscriptMessage[] = [...(transcripts[0] ?? [])];
  const boundaries: HistoryBoundary[] = [];
  lineage.forEach((step, i) => {
    const parent = transcripts[i] ?? [];
    const child = transcripts[i + 1] ?? [];
    const summary = child.findIndex(isSummaryMessage);
    if (step.kind !== 'compression' || summary < 0) {
      boundaries.push({ index: out.length, kind: step.kind, at: step.at });
      out.push(...child);
      return;
    }
    const after = child.slice(summary + 1);
    const copied = copiedPart(parent, after);
    // The child as the compression wrote it: what came before its summary, the summary, the copies.
    boundaries.push({
      index: out.length,
      kind: step.kind,
      at: step.at,
      messages_before: parent.length,
      messages_after: summary + 1 + copied,
      method: step.method ?? 'summary',
    });
    out.push(child[summary]!, ...after.slice(copied));
  });
  return { messages: out, boundaries };
}

/**
 * session.history: `full`, every message across the lineage, and `boundaries` where each
 * compression or reset happened; `model`, the system prompt and the current transcript, as the model sees them.
 */
export async function sessionHistory(
  sessions: Pick<SessionStore, 'loadTranscript' | 'loadWholeTranscript'>,
  receipt: CreationReceipt,
  view: 'full' | 'model',
  options: ReplyOptions = {},
): Promise<Record<string, unknown>> {
  const logicalId = receipt.logical_id;
  const load = (id: string) => sessions.loadTranscript(id);
  if (view === 'model') {
    const system = { role: 'system', content: systemPromptFor(receipt) };
    const messages = await wholeTranscript(sessions, receipt.current_session_id, 'stored', options);
    return {
      session_id: logicalId,
      view,
      messages: messages instanceof JsonText ? messages.prepend([system]) : [system, ...messages],
    };
  }
  if (options.serialized && receipt.lineage.length === 0) {
    // One transcript: the full history is that transcript, with no boundary (fullHistory).
    return {
      session_id: logicalId,
      view,
      messages: await wholeTranscript(sessions, logicalId, 'stored', options),
      boundaries: [],
      model_changes: receipt.model_changes ?? [],
    };
  }
  const ids = [logicalId, ...receipt.lineage.map((step) => step.to)];
  const transcripts = await Promise.all(ids.map(load));
  return {
    session_id: logicalId,
    view,
    ...fullHistory(receipt.lineage, transcripts),
    // Every move to another provider or model (session.model), oldest first.
    model_changes: receipt.model_changes ?? [],
  };
}
