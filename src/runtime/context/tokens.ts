/**
 * Counting prompt tokens when the provider has not told us (SPEC LIN-1, issue 11 "Context budget").
 *
 * The provider's own count (`usage.prompt_tokens`, kept as `last_prompt_tokens`) is the truth; this
 * counter fills the gap for messages the provider has not seen yet. It uses gpt-tokenizer's
 * cl100k_base encoding (docs/dependencies.md), loaded on the first count and not before: loading it
 * costs about half a second and 40 MB, which a daemon that never needs it must not pay at start-up.
 */
import { createRequire } from 'node:module';
import type { WireMessage } from '../model/wire.js';

/** What every chat message costs besides its text (role, separators), as OpenAI documents it. */
const PER_MESSAGE_TOKENS = 4;

type CountTokens = (text: string) => number;
let counter: CountTokens | null = null;

function loadCounter(): CountTokens {
  if (counter === null) {
    const require = createRequire(import.meta.url);
    const encoding = require('gpt-tokenizer/encoding/cl100k_base') as {
      countTokens(text: string): number;
    };
    counter = (text) => encoding.countTokens(text);
  }
  return counter;
}

/** Whether the tokenizer has been loaded in this process (start-up measurements read it). */
export function tokenizerLoaded(): boolean {
  return counter !== null;
}

export function countTextTokens(text: string): number {
  return text === '' ? 0 : loadCounter()(text);
}

/** The tokens one message adds to a request: its text, its tool calls, and the per-message frame. */
export function countMessageTokens(message: WireMessage): number {
  let tokens = PER_MESSAGE_TOKENS;
  if (typeof message.content === 'string') tokens += countTextTokens(message.content);
  for (const call of message.tool_calls ?? []) {
    tokens += countTextTokens(call.function.name) + countTextTokens(call.function.arguments) + 3;
  }
  return tokens;
}

export function countPromptTokens(messages: readonly WireMessage[]): number {
  let tokens = 3; // every reply is primed with the assistant header
  for (const message of messages) tokens += countMessageTokens(message);
  return tokens;
}

/** A whole request: its messages and the tool schemas the model is shown with them. */
export function countRequestTokens(messages: readonly WireMessage[], tools: readonly unknown[] = []): number {
  return countPromptTokens(messages) + (tools.length === 0 ? 0 : countTextTokens(JSON.stringify(tools)));
}
