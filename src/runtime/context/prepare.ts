/**
 * One compression up to, not including, its publication: plan the transcript, make the ONE summary
 * call, compose the child transcript. Nothing is written here; the caller publishes the result in
 * one transaction (LIN-1), so a failed summary leaves the transcript untouched.
 */
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type { ChatModel } from '../model/client.js';
import { isModelError } from '../model/errors.js';
import { messageTokens, thresholdTokens, type ContextSettings } from './budget.js';
import {
  composeCompressed,
  notePlaceholder,
  planSteps,
  reduceByDropping,
  stubToolOutput,
  summaryMessage,
  type CompressionPlan,
} from './compress.js';
import { LoopSlices, runInSlices } from './slices.js';
import { summaryPieces, summaryRequest, summaryTexts } from './summary-prompt.js';
import { countTextTokens, keepPrimedCounts, messageTexts, primeTextCounts } from './tokens.js';
import { toWireMessage } from '../model/wire.js';

export interface CompressionSettings extends ContextSettings {
  /** The recent tail kept verbatim, in tokens (never less than the last user message onwards). */
  tailTokens: number;
}

/** How a compression shortened the transcript: a model's summary, or the deterministic reduction. */
export type CompressionMethod = 'summary' | 'dropped';

export type PreparedCompression =
  | {
      kind: 'ready';
      messages: TranscriptMessage[];
      method: CompressionMethod;
      /** Why no summary was used (set when method is 'dropped'). */
      summaryError?: string;
      /** Messages the deterministic reduction dropped (0 for a summary). */
      dropped: number;
      before: { messages: number; tokens: number };
      after: { messages: number; tokens: number };
    }
  | { kind: 'nothing'; reason: string }
  | { kind: 'failed'; error: string };

function tokensOfAll(messages: readonly TranscriptMessage[]): number {
  return messages.reduce((sum, m) => sum + messageTokens(m), 0);
}

/** tokensOfAll in slices, for the whole transcript (messageTokens keeps each count for later). */
async function tokensOfAllInSlices(messages: readonly TranscriptMessage[]): Promise<number> {
  const slices = new LoopSlices();
  let sum = 0;
  for (const message of messages) {
    if (slices.due()) await slices.pause();
    sum += messageTokens(message);
  }
  return sum;
}

/** The texts countMessageTokens counts of each message. */
function* textsOf(messages: Iterable<TranscriptMessage>): Generator<string, void, undefined> {
  for (const message of messages) yield* messageTexts(toWireMessage(message));
}

/** Every message reduceByDropping or composeCompressed may count: the plan's, and their stubs. */
function* planMessages(plan: Extract<CompressionPlan, { kind: 'plan' }>): Generator<TranscriptMessage> {
  yield* plan.middle;
  for (const message of [...plan.head, ...plan.tail]) {
    yield message;
    yield stubToolOutput(message);
  }
}

/** The most summary calls one compression makes; older pieces beyond them are left out. */
const MAX_PIECES = 8;

/**
 * One compression's new transcript (issue 26 item 1: whatever the summariser answers, the result
 * fits). The middle is summarised in pieces that each fit the window, each piece's summary handed
 * to the next as the previous summary. A summary that is empty, a tool call, an error, a timeout,
 * longer than its share of the window, or one that leaves the transcript over budget (as one longer
 * than what it replaces does when the transcript had to shrink) is not used: the oldest exchanges are dropped instead (reduceByDropping).
 * `summarize: false` (the summariser is cooling down after failures) goes straight to that.
 */
export async function prepareCompression(options: {
  messages: readonly TranscriptMessage[];
  model: ChatModel;
  modelName?: string | undefined;
  settings: CompressionSettings;
  signal?: AbortSignal | undefined;
  /** Why no summary may be asked for now, or absent when it may. */
  noSummary?: string | undefined;
}): Promise<PreparedCompression> {
  // Every text counted below is counted on the worker first (primeTextCounts), so the tokenizer
  // is neither loaded nor run on the event loop; a text not primed is still counted, here.
  const release = keepPrimedCounts();
  try {
    return await prepareCounted(options);
  } finally {
    release();
  }
}

async function prepareCounted(
  options: Parameters<typeof prepareCompression>[0],
): Promise<PreparedCompression> {
  const { messages, settings } = options;
  await primeTextCounts(textsOf(messages));
  // Counted first, in slices: the plan's tail then reads the counts kept beside each message.
  const beforeTokens = await tokensOfAllInSlices(messages);
  const plan = await runInSlices(
    planSteps(messages, { tailTokens: settings.tailTokens, tokens: messageTokens }),
  );
  if (plan.kind === 'nothing') return { kind: 'nothing', reason: plan.reason };
  const budget = Math.floor(thresholdTokens(settings) * 0.8);
  const before = { messages: messages.length, tokens: beforeTokens };
  const ready = async (
    child: TranscriptMessage[],
    method: CompressionMethod,
    dropped: number,
    summaryError?: string,
  ): Promise<PreparedCompression> => {
    await primeTextCounts(textsOf(child));
    return {
      kind: 'ready',
      messages: child,
      method,
      dropped,
      ...(summaryError === undefined ? {} : { summaryError }),
      before,
      after: { messages: child.length, tokens: tokensOfAll(child) },
    };
  };
  await primeTextCounts(textsOf(planMessages(plan)));
  let why = options.noSummary;
  if (why === undefined) {
    const summary = await summarise(plan, options, budget);
    if (options.signal?.aborted) return { kind: 'failed', error: 'the compression was interrupted' };
    if (summary.kind === 'summary') {
      await primeTextCounts(textsOf([summaryMessage(summary.text)]));
      const child = composeCompressed(plan, summary.text, budget);
      if (tokensOfAll(child) <= budget) return ready(child, 'summary', 0);
      why = `the summary left the conversation over its budget of ${budget} tokens (longer than what it replaces)`;
    } else why = summary.error;
  }
  await primeTextCounts(textsOf([notePlaceholder(why, plan.previousSummary), notePlaceholder(why, null)]));
  const reduced = reduceByDropping(plan, why, budget);
  return ready(
    reduced.messages,
    'dropped',
    reduced.dropped,
    options.noSummary === undefined ? why : undefined,
  );
}

/** The summary of the plan's middle, made in pieces that each fit the window, or why there is none. */
async function summarise(
  plan: Extract<CompressionPlan, { kind: 'plan' }>,
  options: {
    model: ChatModel;
    modelName?: string | undefined;
    settings: CompressionSettings;
    signal?: AbortSignal | undefined;
  },
  budget: number,
): Promise<{ kind: 'summary'; text: string } | { kind: 'failed'; error: string }> {
  // The summariser is shown at most 80% of the window (its answer needs the rest), of which a
  // summary may take a quarter: the previous summary handed to the next piece must leave it room.
  const shown = Math.floor(options.settings.window * 0.8);
  const summaryCap = Math.max(64, Math.floor(Math.min(budget, options.settings.window) / 4));
  await primeTextCounts(summaryTexts(plan.middle, plan.previousSummary));
  const previousTokens = countTextTokens(plan.previousSummary ?? '');
  if (previousTokens > summaryCap * 2)
    return { kind: 'failed', error: 'the previous summary is too large to update within the window' };
  const pieces = await summaryPieces(plan.middle, shown - Math.max(previousTokens, summaryCap));
  let previous = plan.previousSummary;
  for (const piece of pieces.slice(-MAX_PIECES)) {
    let text: string;
    try {
      const result = await options.model.complete({
        messages: summaryRequest(piece, previous, shown),
        ...(options.modelName ? { model: options.modelName } : {}),
        stream: false,
        signal: options.signal,
      });
      if (result.toolCalls.length > 0)
        return { kind: 'failed', error: 'the summary call answered with a tool call instead of a summary' };
      text = (result.text ?? '').trim();
    } catch (error) {
      const why = isModelError(error)
        ? error.message
        : error instanceof Error
          ? error.message
          : String(error);
      return { kind: 'failed', error: `the summary call failed: ${why}` };
    }
    if (text === '') return { kind: 'failed', error: 'the summary call answered with no text' };
    await primeTextCounts([text]);
    if (countTextTokens(text) > summaryCap)
      return { kind: 'failed', error: `the summary was longer than the ${summaryCap} tokens it may take` };
    previous = text;
  }
  // A summary longer than what it replaces is refused only where it matters: when the transcript it
  // makes is over budget (prepareCompression), which an automatic compression's always would be.
  return previous === null
    ? { kind: 'failed', error: 'the summary call answered with no text' }
    : { kind: 'summary', text: previous };
}
/** The cooldown after `failures` failed summaries in a row: 30 s, doubling, at most an hour. */
export function compressionCooldownMs(failures: number): number {
  return Math.min(3_600_000, 30_000 * 2 ** Math.max(0, failures - 1));
}
