/**
 * The context budget of one model request (issue 11 "Context budget"): whether the request would
 * pass `compression.threshold` × `context_window` and must be compressed first.
 *
 * The count is the provider's own when it told us (the prompt tokens of the previous call of this
 * turn, plus what was appended since), else the tokenizer's. Two things keep it cheap on every call:
 * a cheap upper bound (no message has more tokens than UTF-8 bytes) settles every request well
 * under the limit without tokenizing anything, and each stored message is tokenized once per
 * process (kept beside the message object, so a cached transcript is never counted twice).
 */
import type { TokenUsage, TranscriptMessage } from '../../domain/vocabulary.js';
import { countTextTokens } from './tokens.js';
import { tokensOf } from './compress.js';

export interface ContextSettings {
  /** Tokens the model accepts in one request (prompt and tool schemas). */
  window: number;
  /** The fraction of the window past which a request is compressed first (0 < threshold ≤ 1). */
  threshold: number;
}

export function thresholdTokens(settings: ContextSettings): number {
  return Math.floor(settings.window * settings.threshold);
}

const counted = new WeakMap<TranscriptMessage, number>();
const textCounts = new Map<string, number>();

/** A message's tokens, counted once per message object. */
export function messageTokens(message: TranscriptMessage): number {
  let tokens = counted.get(message);
  if (tokens === undefined) {
    tokens = tokensOf(message);
    counted.set(message, tokens);
  }
  return tokens;
}

/** The tokens of a text that repeats on every request (the system prompt, the tool schemas). */
function fixedTokens(text: string): number {
  let tokens = textCounts.get(text);
  if (tokens === undefined) {
    tokens = countTextTokens(text);
    if (textCounts.size > 256) textCounts.clear();
    textCounts.set(text, tokens);
  }
  return tokens;
}

/** An upper bound on a message's tokens that costs no tokenizing: its UTF-8 size plus the frame. */
function upperBound(message: TranscriptMessage): number {
  let bytes = Buffer.byteLength(message.content ?? '');
  for (const call of message.tool_calls ?? [])
    bytes += Buffer.byteLength(call.function.arguments) + call.function.name.length + 3;
  return bytes + 4;
}

/** What the runner knows of the provider's count: the prompt of the call before `since` messages. */
export interface ReportedPrompt {
  tokens: number;
  /** How many messages of the view that prompt held. */
  messages: number;
}

/** The prompt tokens a usage block reports (0 when the provider reported none). */
export function reportedPromptTokens(usage: TokenUsage): number {
  return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
}

/** The tokens of a request of `system` + `view` + `tools`, estimated as described above. */
export function requestTokens(
  system: string,
  view: readonly TranscriptMessage[],
  toolsJson: string,
  reported: ReportedPrompt | null,
): number {
  if (reported !== null && reported.tokens > 0 && reported.messages <= view.length) {
    let tokens = reported.tokens;
    for (let i = reported.messages; i < view.length; i++) tokens += messageTokens(view[i]!);
    return tokens;
  }
  let tokens = 3 + (system ? fixedTokens(system) + 4 : 0) + (toolsJson ? fixedTokens(toolsJson) : 0);
  for (const message of view) tokens += messageTokens(message);
  return tokens;
}

/** Whether the request is over the threshold; tokenizes only when the cheap bound cannot tell. */
export function overThreshold(
  settings: ContextSettings,
  system: string,
  view: readonly TranscriptMessage[],
  toolsJson: string,
  reported: ReportedPrompt | null,
): boolean {
  const limit = thresholdTokens(settings);
  if (reported === null) {
    let bound = 3 + Buffer.byteLength(system) + 4 + Buffer.byteLength(toolsJson);
    for (const message of view) bound += upperBound(message);
    if (bound <= limit) return false;
  }
  return requestTokens(system, view, toolsJson, reported) > limit;
}

/** Why a compression ran: the request passed the threshold, the provider refused it, or a human asked. */
export type CompressionReason = 'threshold' | 'overflow' | 'manual';

export type CompressOutcome =
  { kind: 'compressed'; messages: TranscriptMessage[] } | { kind: 'skipped'; reason: string };

/** What a turn needs to stay inside its model's context window. */
export interface TurnContext {
  settings: ContextSettings;
  /**
   * Compresses the session's stored transcript now (the turn holds the session's slot) and resolves
   * with the new transcript as the model sees it, or why nothing changed.
   */
  compress(reason: CompressionReason, signal: AbortSignal): Promise<CompressOutcome>;
}
