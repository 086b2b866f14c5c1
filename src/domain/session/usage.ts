/**
 * A turn's usage as both engines store it (issue 26 item 11): every turn's tokens are counted,
 * completed, failed or interrupted alike, since the provider billed them whatever the outcome, and
 * the prompt size of its last model call replaces `last_prompt_tokens`.
 */
import type { TurnEnding } from '../../runtime/runner.js';
import type { UsageUpdate } from '../ports/session-store.js';

export function turnUsage(ending: Pick<TurnEnding, 'usage' | 'last_prompt_tokens'>): UsageUpdate {
  return ending.last_prompt_tokens === null
    ? { ...ending.usage }
    : { ...ending.usage, last_prompt_tokens: ending.last_prompt_tokens };
}

/** Whether the turn used anything worth a write. */
export function usedTokens(ending: Pick<TurnEnding, 'usage'>): boolean {
  return ending.usage.total_tokens > 0 || ending.usage.input_tokens > 0 || ending.usage.output_tokens > 0;
}
