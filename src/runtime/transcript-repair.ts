/**
 * Closes tool calls a crash left without a result, so the model is never shown a call as complete
 * and can continue from the transcript. Pure and idempotent.
 */
import type { TranscriptMessage } from '../domain/vocabulary.js';

export const INTERRUPTED_TOOL_RESULT =
  'This tool call was interrupted: the gateway stopped before it finished, so its effect is unknown.';

export function closeDanglingToolCalls<M extends TranscriptMessage>(
  messages: readonly M[],
): { repaired: TranscriptMessage[]; added: TranscriptMessage[] } {
  const repaired: TranscriptMessage[] = [];
  const added: TranscriptMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    repaired.push(message);
    if (message.role !== 'assistant' || !message.tool_calls?.length) continue;
    let j = i + 1;
    const answered = new Set<string>();
    while (j < messages.length && messages[j]!.role === 'tool') {
      answered.add(messages[j]!.tool_call_id ?? '');
      repaired.push(messages[j]!);
      j++;
    }
    for (const call of message.tool_calls) {
      if (answered.has(call.id)) continue;
      const synthetic: TranscriptMessage = {
        role: 'tool',
        tool_call_id: call.id,
        content: INTERRUPTED_TOOL_RESULT,
      };
      if (message.admission_id !== undefined) synthetic.admission_id = message.admission_id;
      repaired.push(synthetic);
      added.push(synthetic);
    }
    i = j - 1;
  }
  return { repaired, added };
}
