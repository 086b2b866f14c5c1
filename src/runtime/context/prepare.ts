/**
 * One compression up to, not including, its publication: plan the transcript, make the ONE summary
 * call, compose the child transcript. Nothing is written here; the caller publishes the result in
 * one transaction (LIN-1), so a failed summary leaves the transcript untouched.
 */
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type { ChatModel } from '../model/client.js';
import { isModelError } from '../model/errors.js';
import { messageTokens, thresholdTokens, type ContextSettings } from './budget.js';
import { composeCompressed, planCompression } from './compress.js';
import { summaryRequest } from './summary-prompt.js';

export interface CompressionSettings extends ContextSettings {
  /** The recent tail kept verbatim, in tokens (never less than the last user message onwards). */
  tailTokens: number;
}

export type PreparedCompression =
  | {
      kind: 'ready';
      messages: TranscriptMessage[];
      before: { messages: number; tokens: number };
      after: { messages: number; tokens: number };
    }
  | { kind: 'nothing'; reason: string }
  | { kind: 'failed'; error: string };

function tokensOfAll(messages: readonly TranscriptMessage[]): number {
  return messages.reduce((sum, m) => sum + messageTokens(m), 0);
}

export async function prepareCompression(options: {
  messages: readonly TranscriptMessage[];
  model: ChatModel;
  modelName?: string | undefined;
  settings: CompressionSettings;
  signal?: AbortSignal | undefined;
}): Promise<PreparedCompression> {
  const { messages, settings } = options;
  const plan = planCompression(messages, { tailTokens: settings.tailTokens });
  if (plan.kind === 'nothing') return { kind: 'nothing', reason: plan.reason };
  // The summariser is shown at most 80% of the window: its answer needs the rest.
  const request = summaryRequest(plan.middle, plan.previousSummary, Math.floor(settings.window * 0.8));
  let summary: string;
  try {
    const result = await options.model.complete({
      messages: request,
      ...(options.modelName ? { model: options.modelName } : {}),
      stream: false,
      signal: options.signal,
    });
    summary = (result.text ?? '').trim();
  } catch (error) {
    const why = isModelError(error) ? error.message : error instanceof Error ? error.message : String(error);
    return { kind: 'failed', error: `the summary call failed: ${why}` };
  }
  if (summary === '') return { kind: 'failed', error: 'the summary call answered with no text' };
  const child = composeCompressed(plan, summary, Math.floor(thresholdTokens(settings) * 0.8));
  return {
    kind: 'ready',
    messages: child,
    before: { messages: messages.length, tokens: tokensOfAll(messages) },
    after: { messages: child.length, tokens: tokensOfAll(child) },
  };
}

/** The cooldown after `failures` failed summaries in a row: 30 s, doubling, at most an hour. */
export function compressionCooldownMs(failures: number): number {
  return Math.min(3_600_000, 30_000 * 2 ** Math.max(0, failures - 1));
}
