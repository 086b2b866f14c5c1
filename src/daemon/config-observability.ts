/**
 * The `metrics` section (docs/observability.md): the Prometheus endpoint on the listener. Off by
 * default; when on, `/metrics` answers loopback peers only, unless `bearer_key_env` names the
 * environment variable holding a bearer key, which every scrape must then present.
 */
import { z } from 'zod';
import { envName } from './config-providers.js';

export const metricsSchema = z
  .strictObject({
    enabled: z.boolean({ error: 'metrics.enabled must be true or false' }).default(false),
    /** The NAME of the variable holding the scrape key; the key itself is never in the file. */
    bearer_key_env: envName.optional(),
  })
  .prefault({});

export type MetricsConfig = z.output<typeof metricsSchema>;

const perMTok = (what: string) =>
  z
    .number({ error: `${what} must be US dollars per million tokens, a number` })
    .min(0, { error: `${what} must be 0 or more` });

const priceSchema = z.strictObject({
  input_per_mtok: perMTok('input_per_mtok'),
  output_per_mtok: perMTok('output_per_mtok'),
  cached_input_per_mtok: perMTok('cached_input_per_mtok').optional(),
  cache_write_per_mtok: perMTok('cache_write_per_mtok').optional(),
});

/**
 * The `pricing` section (docs/cost.md): provider name → model name → price, overriding the built-in
 * list (src/runtime/model/pricing.ts). `custom` prices the models of sessions with their own base_url.
 */
export const pricingSchema = z
  .record(z.string().min(1), z.record(z.string().min(1), priceSchema))
  .default({});
