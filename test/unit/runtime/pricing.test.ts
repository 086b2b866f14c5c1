/**
 * Issue 29: a model call's cost (src/runtime/model/pricing.ts, src/runtime/model/wire.ts): the
 * provider's reported figure first, else tokens × the configured or built-in price (cached input at
 * its own price), else unknown; and how a turn's calls add up.
 */
import { describe, expect, it } from 'vitest';
import { combineCostStatus, type TokenUsage } from '../../../src/domain/vocabulary.js';
import { baseModelName, callCost, priceOf } from '../../../src/runtime/model/pricing.js';
import { addUsage, toTokenUsage, ZERO_USAGE } from '../../../src/runtime/model/wire.js';

const usage = (fields: Partial<TokenUsage>): TokenUsage => ({ ...ZERO_USAGE, ...fields });

describe('a call priced', () => {
  it("takes the provider's usage.cost as reported, a free call included", () => {
    const reported = toTokenUsage({ prompt_tokens: 100, completion_tokens: 10, cost: 0.0042 });
    expect(reported).toMatchObject({ cost_usd: 0.0042, cost_status: 'reported' });
    expect(callCost(reported, priceOf({}, 'openai', 'gpt-4o'))).toEqual({
      cost_usd: 0.0042,
      cost_status: 'reported',
    });
    expect(toTokenUsage({ prompt_tokens: 5, cost: 0 })).toMatchObject({
      cost_usd: 0,
      cost_status: 'reported',
    });
    expect(toTokenUsage({ prompt_tokens: 5 })).not.toHaveProperty('cost_status');
  });

  it('estimates from the price, cached input at the cached price', () => {
    // 1,000 prompt tokens of which 600 read from the cache, 200 out.
    const call = toTokenUsage({
      prompt_tokens: 1000,
      completion_tokens: 200,
      prompt_tokens_details: { cached_tokens: 600 },
    });
    const price = { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 };
    expect(callCost(call, price).cost_status).toBe('estimated');
    expect(callCost(call, price).cost_usd).toBeCloseTo((400 * 2.5 + 200 * 10 + 600 * 1.25) / 1e6, 12);
    // Without a cached price, cached tokens cost the input price.
    const plain = { input_per_mtok: 2.5, output_per_mtok: 10 };
    expect(callCost(call, plain).cost_usd).toBeCloseTo((1000 * 2.5 + 200 * 10) / 1e6, 12);
  });

  it('is unknown without a reported cost or a price', () => {
    expect(callCost(usage({ input_tokens: 10 }), priceOf({}, 'local', 'my-finetune'))).toEqual({
      cost_usd: 0,
      cost_status: 'unknown',
    });
  });

  it('finds the configured price first, then the built-in one by base name', () => {
    const mine = { input_per_mtok: 1, output_per_mtok: 2 };
    expect(priceOf({ openrouter: { 'openai/gpt-4o': mine } }, 'openrouter', 'openai/gpt-4o')).toBe(mine);
    expect(priceOf({}, 'openrouter', 'openai/gpt-4o')?.input_per_mtok).toBe(2.5);
    expect(priceOf({}, 'default', 'gpt-4o-2024-08-06')?.output_per_mtok).toBe(10);
    expect(priceOf({}, 'anthropic', 'claude-sonnet-4-20250514')?.cache_write_per_mtok).toBe(3.75);
    expect(baseModelName('anthropic/claude-3-5-haiku-latest')).toBe('claude-3-5-haiku');
    expect(priceOf({}, 'default', 'gpt-4o-mini')?.input_per_mtok).toBe(0.15);
  });
});

describe("a turn's calls added up", () => {
  it('sums the dollars and keeps the least certain status', () => {
    const turn = usage({});
    addUsage(
      turn,
      usage({ input_tokens: 1, cost_usd: 0.5, cost_status: 'reported', provider: 'p', model: 'm' }),
    );
    expect(turn).toMatchObject({ cost_usd: 0.5, cost_status: 'reported', provider: 'p', model: 'm' });
    addUsage(turn, usage({ input_tokens: 1, cost_usd: 0.25, cost_status: 'estimated' }));
    expect(turn).toMatchObject({ cost_usd: 0.75, cost_status: 'estimated' });
    addUsage(turn, usage({ input_tokens: 1, cost_usd: 0, cost_status: 'unknown' }));
    expect(turn).toMatchObject({ cost_usd: 0.75, cost_status: 'unknown', input_tokens: 3 });
    expect(combineCostStatus('reported', undefined)).toBe('reported');
    expect(combineCostStatus('estimated', 'reported')).toBe('estimated');
  });
});
