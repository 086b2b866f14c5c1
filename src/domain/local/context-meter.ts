/**
 * How full a session's context is (issue 31 item 3, `session.context`): the tokens of the request
 * the next turn would send before its new message, counted as the turn's own budget check counts
 * them (runtime/context/budget.ts requestTokens: the system prompt, the tool schemas, the stored
 * transcript), against the model's window and the `compression.threshold` past which that turn
 * compresses first. Pure but for the tokenizer: the caller loads the transcript.
 */
import { requestTokens, thresholdTokens, type ContextSettings } from '../../runtime/context/budget.js';
import { toWireTool } from '../../runtime/model/wire.js';
import type { ToolDefinition } from '../../runtime/types.js';
import type { TranscriptMessage } from '../vocabulary.js';

export interface SessionContextView {
  session_id: string;
  /** Tokens the model accepts in one request. */
  window: number;
  /** `compression.threshold`: the fraction of the window past which a turn compresses first. */
  threshold: number;
  /** window × threshold: the tokens past which the next request is compressed before it is sent. */
  compress_at: number;
  /** The next request's tokens before the new message: system prompt, tool schemas, transcript. */
  tokens: number;
  /** tokens / window, 0..1 (more than 1 when the transcript no longer fits). */
  used: number;
  /** Tokens the conversation may still grow by before a turn compresses it (0 when it is due). */
  until_compression: number;
  /** The next turn compresses before its first model call. */
  compression_due: boolean;
  /** Messages of the transcript the model sees now (after the last compression or reset). */
  messages: number;
}

export function contextMeter(options: {
  sessionId: string;
  settings: ContextSettings;
  systemPrompt: string;
  transcript: readonly TranscriptMessage[];
  tools: readonly ToolDefinition[];
}): SessionContextView {
  const { settings } = options;
  // Exactly the tool schemas the runner sends, so the count is the one its budget check makes.
  const toolsJson = options.tools.length > 0 ? JSON.stringify(options.tools.map(toWireTool)) : '';
  const tokens = requestTokens(options.systemPrompt, options.transcript, toolsJson, null);
  const compressAt = thresholdTokens(settings);
  return {
    session_id: options.sessionId,
    window: settings.window,
    threshold: settings.threshold,
    compress_at: compressAt,
    tokens,
    used: settings.window > 0 ? tokens / settings.window : 0,
    until_compression: Math.max(0, compressAt - tokens),
    compression_due: tokens > compressAt,
    messages: options.transcript.length,
  };
}
