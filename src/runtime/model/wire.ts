/**
 * The OpenAI chat-completions wire shapes Gatehouse sends and reads, and the mapping from stored
 * transcript messages to what the model is shown.
 */
import {
  combineCostStatus,
  type TokenUsage,
  type ToolCall,
  type TranscriptMessage,
} from '../../domain/vocabulary.js';
import type { ToolDefinition } from '../types.js';

/**
 * A message as the model receives it: no reasoning, no Gatehouse bookkeeping fields, and no `name` on
 * tool results (strict servers reject it; the tool_call_id links a result to its call).
 */
export interface WireMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
}

export interface WireTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/** The usage block of a completion (fields vary between providers; all optional). */
export interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number; cache_write_tokens?: number } | null;
  /** Anthropic-style fields some gateways pass through. */
  cache_read_input_tokens?: number;
  cache_creation_input_tokens?: number;
  /** The call's cost in US dollars, as OpenRouter (and gateways like it) report it. */
  cost?: number;
}

export const ZERO_USAGE: Readonly<TokenUsage> = Object.freeze({
  input_tokens: 0,
  output_tokens: 0,
  cache_read_tokens: 0,
  cache_write_tokens: 0,
  total_tokens: 0,
});

/**
 * Maps a provider's usage into our counters. `input_tokens` counts only the prompt tokens that were
 * neither read from nor written to the cache, so the four counters add up to the total.
 */
export function toTokenUsage(usage: WireUsage | null | undefined): TokenUsage {
  if (!usage) return { ...ZERO_USAGE };
  const prompt = num(usage.prompt_tokens);
  const output = num(usage.completion_tokens);
  const cacheRead = num(usage.prompt_tokens_details?.cached_tokens ?? usage.cache_read_input_tokens);
  const cacheWrite = num(
    usage.prompt_tokens_details?.cache_write_tokens ?? usage.cache_creation_input_tokens,
  );
  return {
    input_tokens: Math.max(0, prompt - cacheRead - cacheWrite),
    output_tokens: output,
    cache_read_tokens: cacheRead,
    cache_write_tokens: cacheWrite,
    total_tokens: num(usage.total_tokens) || prompt + output,
    // A reported cost of 0 is a real answer (a free model), so only a missing one is left unpriced.
    ...(typeof usage.cost === 'number' && Number.isFinite(usage.cost) && usage.cost >= 0
      ? { cost_usd: usage.cost, cost_status: 'reported' as const }
      : {}),
  };
}

export function addUsage(into: TokenUsage, add: TokenUsage): void {
  into.input_tokens += add.input_tokens;
  into.output_tokens += add.output_tokens;
  into.cache_read_tokens += add.cache_read_tokens;
  into.cache_write_tokens += add.cache_write_tokens;
  into.total_tokens += add.total_tokens;
  if (add.cost_status !== undefined) {
    into.cost_usd = (into.cost_usd ?? 0) + (add.cost_usd ?? 0);
    into.cost_status = combineCostStatus(into.cost_status, add.cost_status);
  }
  into.provider ??= add.provider;
  into.model ??= add.model;
}

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : 0;
}

/**
 * The wire form of a stored message. In a shared session a user message carries its sender's name;
 * it is rendered as a `[name]` prefix here, at run time (SPEC KEY-3), never stored in the content.
 */
export function toWireMessage(message: TranscriptMessage): WireMessage {
  let content = message.content;
  if (message.role === 'user' && message.sender_name && content !== null) {
    content = `[${message.sender_name}] ${content}`;
  }
  const wire: WireMessage = { role: message.role, content };
  if (message.tool_calls && message.tool_calls.length > 0) {
    wire.tool_calls = message.tool_calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }));
  }
  if (message.tool_call_id !== undefined) wire.tool_call_id = message.tool_call_id;
  return wire;
}

export function toWireTool(tool: ToolDefinition): WireTool {
  return {
    type: 'function',
    function: { name: tool.name, description: tool.description, parameters: tool.parameters },
  };
}
