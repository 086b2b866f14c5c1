/**
 * What a model call cost (docs/cost.md): the provider's own figure when it reports one
 * (`usage.cost`, OpenRouter-style), else its tokens × the model's price, else unknown. Prices are
 * US dollars per million tokens: the configuration's for a provider and model first, then the
 * built-in list of well-known models below.
 */
import type { CostStatus, TokenUsage } from '../../domain/vocabulary.js';

export interface ModelPrice {
  /** Input tokens read neither from nor into a cache. */
  input_per_mtok: number;
  output_per_mtok: number;
  /** Input tokens read from the provider's cache; absent: the input price. */
  cached_input_per_mtok?: number | undefined;
  /** Input tokens written into the cache; absent: the input price. */
  cache_write_per_mtok?: number | undefined;
}

/**
 * List prices of well-known models (USD per million tokens, as their vendors publish them; a price
 * changes, and the configuration's `pricing` overrides any of them). Matched on the model's name
 * without a vendor prefix (`openai/gpt-4o`) or a date suffix (`gpt-4o-2024-08-06`).
 */
export const BUILTIN_PRICES: Readonly<Record<string, ModelPrice>> = {
  'gpt-4o': { input_per_mtok: 2.5, output_per_mtok: 10, cached_input_per_mtok: 1.25 },
  'gpt-4o-mini': { input_per_mtok: 0.15, output_per_mtok: 0.6, cached_input_per_mtok: 0.075 },
  'gpt-4.1': { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 },
  'gpt-4.1-mini': { input_per_mtok: 0.4, output_per_mtok: 1.6, cached_input_per_mtok: 0.1 },
  'gpt-4.1-nano': { input_per_mtok: 0.1, output_per_mtok: 0.4, cached_input_per_mtok: 0.025 },
  o3: { input_per_mtok: 2, output_per_mtok: 8, cached_input_per_mtok: 0.5 },
  'o4-mini': { input_per_mtok: 1.1, output_per_mtok: 4.4, cached_input_per_mtok: 0.275 },
  'claude-opus-4': {
    input_per_mtok: 15,
    output_per_mtok: 75,
    cached_input_per_mtok: 1.5,
    cache_write_per_mtok: 18.75,
  },
  'claude-sonnet-4': {
    input_per_mtok: 3,
    output_per_mtok: 15,
    cached_input_per_mtok: 0.3,
    cache_write_per_mtok: 3.75,
  },
  'claude-3-7-sonnet': {
    input_per_mtok: 3,
    output_per_mtok: 15,
    cached_input_per_mtok: 0.3,
    cache_write_per_mtok: 3.75,
  },
  'claude-3-5-haiku': {
    input_per_mtok: 0.8,
    output_per_mtok: 4,
    cached_input_per_mtok: 0.08,
    cache_write_per_mtok: 1,
  },
};

/** The configured prices: provider → model → price. */
export type PriceOverrides = Readonly<Record<string, Readonly<Record<string, ModelPrice>>>>;

/** The name a built-in price is listed under: no `vendor/` prefix, no `-YYYY-MM-DD` or `-YYYYMMDD` suffix. */
export function baseModelName(model: string): string {
  return model
    .slice(model.lastIndexOf('/') + 1)
    .replace(/-(\d{4}-\d{2}-\d{2}|\d{8})$/, '')
    .replace(/-latest$/, '');
}

/** The price of `model` at `provider`: configured, else built in, else null. */
export function priceOf(overrides: PriceOverrides, provider: string, model: string): ModelPrice | null {
  return overrides[provider]?.[model] ?? BUILTIN_PRICES[baseModelName(model)] ?? null;
}

/** A call's cost: what the provider reported, else the tokens priced, else unknown (0 dollars). */
export function callCost(
  usage: TokenUsage,
  price: ModelPrice | null,
): { cost_usd: number; cost_status: CostStatus } {
  if (usage.cost_status === 'reported') return { cost_usd: usage.cost_usd ?? 0, cost_status: 'reported' };
  if (price === null) return { cost_usd: 0, cost_status: 'unknown' };
  const dollars =
    usage.input_tokens * price.input_per_mtok +
    usage.output_tokens * price.output_per_mtok +
    usage.cache_read_tokens * (price.cached_input_per_mtok ?? price.input_per_mtok) +
    usage.cache_write_tokens * (price.cache_write_per_mtok ?? price.input_per_mtok);
  return { cost_usd: dollars / 1_000_000, cost_status: 'estimated' };
}
