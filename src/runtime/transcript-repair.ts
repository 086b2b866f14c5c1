/**
 * Closing tool calls a crash left open (issue 3, crash safety of issue 5). Pure: no store, no I/O.
 *
 * The runner stores an assistant message with its tool calls before any of them runs, and each
 * result once it exists. If the gateway dies in between (SIGKILL, power loss), the transcript holds a
 * call with no result, which OpenAI-compatible servers reject and which says nothing about what
 * happened. Before the next turn the gateway loads the history, calls closeDanglingToolCalls,
 * persists `added`, and continues from `repaired`.
 *
 * Invariants of the result:
 * - every tool call of every assistant message has exactly one tool result;
 * - an existing result is never touched, and a call that has one (anywhere) never gets another;
 * - a synthetic result sits right after the results its assistant message already has, in the
 *   order of the calls, and says the effect is unknown: it is never presented as a completed call;
 * - running it again on `repaired` adds nothing.
 */
import type { TranscriptMessage } from '../domain/vocabulary.js';

/** The marker every synthetic result starts with; tests and tools may look for it. */
export const GATEWAY_STOP_MARKER = '[interrupted by a gateway stop]';

export const GATEWAY_STOP_RESULT =
  `${GATEWAY_STOP_MARKER} The gateway stopped while this tool call was pending or running, so no ` +
  'result was recorded. Its effect is unknown: it may have done all, part or none of its work. ' +
  'Check the current state before relying on it, and before running it again.';

export interface TranscriptRepair {
  /** The transcript with one synthetic result for each call that had none. */
  repaired: TranscriptMessage[];
  /** The synthetic results, in the order they appear in `repaired` (empty: nothing to do). */
  added: TranscriptMessage[];
  /**
   * True when `repaired` is exactly the input followed by `added`, so appending `added` to the
   * store yields `repaired`. The runner only leaves dangling calls at the tail (the crash stops
   * everything after them); false means they sit mid-transcript and the caller must rewrite.
   */
  appendable: boolean;
}

export function closeDanglingToolCalls(messages: readonly TranscriptMessage[]): TranscriptRepair {
  const answered = new Set<string>();
  for (const message of messages) {
    if (message.role === 'tool' && message.tool_call_id !== undefined) answered.add(message.tool_call_id);
  }

  const repaired: TranscriptMessage[] = [];
  const added: TranscriptMessage[] = [];
  let appendable = true;
  for (let i = 0; i < messages.length;) {
    const message = messages[i]!;
    repaired.push(message);
    i++;
    const calls = message.role === 'assistant' ? (message.tool_calls ?? []) : [];
    if (calls.length === 0) continue;
    // The results this assistant message already has follow it directly.
    while (i < messages.length && messages[i]!.role === 'tool') repaired.push(messages[i++]!);
    for (const call of calls) {
      if (answered.has(call.id)) continue;
      answered.add(call.id); // a call id repeated in the transcript still gets one result
      const synthetic: TranscriptMessage = {
        role: 'tool',
        tool_call_id: call.id,
        name: call.function.name,
        content: GATEWAY_STOP_RESULT,
        ...(message.admission_id !== undefined ? { admission_id: message.admission_id } : {}),
      };
      repaired.push(synthetic);
      added.push(synthetic);
      if (i < messages.length) appendable = false;
    }
  }
  return { repaired, added, appendable };
}
