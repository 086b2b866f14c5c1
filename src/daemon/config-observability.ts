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

/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * The `telemetry` section (docs/observability.md, "Traces"): OpenTelemetry traces of turns, sent
 * over OTLP/HTTP to `otlp_endpoint`. Off without an endpoint, and then OpenTelemetry is never
 * loaded; the other keys need the endpoint. Header values (a collector's key) come from the
 * environment variables `headers_env` names, never the file.
 */
export const telemetrySchema = z
  .strictObject({
    /** The collector's OTLP/HTTP base URL (as OTEL_EXPORTER_OTLP_ENDPOINT): `/v1/traces` is appended. */
    otlp_endpoint: z
      .string({ error: 'telemetry.otlp_endpoint must be a URL' })
      .superRefine((value, ctx) => {
        const problem = endpointProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', message: `telemetry.otlp_endpoint ${problem}` });
      })
      .optional(),
    /** Header name → the NAME of the environment variable holding its value. */
    headers_env: z
      .record(z.string(), envName)
      .superRefine((headers, ctx) => {
        for (const name of Object.keys(headers))
          if (!HEADER_NAME.test(name))
            ctx.addIssue({
              code: 'custom',
              message: `telemetry.headers_env: ${JSON.stringify(name)} is not an HTTP header name`,
            });
      })
      .default({}),
    /** Put message content (prompts, answers, tool arguments and results) on spans. */
    capture_content: z.boolean({ error: 'telemetry.capture_content must be true or false' }).default(false),
  })
  .superRefine((section, ctx) => {
    if (section.otlp_endpoint !== undefined) return;
    for (const key of ['headers_env', 'capture_content'] as const) {
      const set =
        key === 'headers_env' ? Object.keys(section.headers_env).length > 0 : section.capture_content;
      if (set)
        ctx.addIssue({
          code: 'custom',
          path: [key],
          message: `telemetry.${key} has no effect without telemetry.otlp_endpoint: set the collector's URL, or remove it`,
        });
    }
  })
  .prefault({});

export type TelemetryConfig = z.output<typeof telemetrySchema>;

function endpointProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL, e.g. http://127.0.0.1:4318';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https (OTLP/HTTP)';
  if (url.username || url.password)
    return 'must not carry credentials: put them in a header whose value telemetry.headers_env names';
  if (url.search || url.hash) return 'must not have a query or a fragment';
  return null;
}

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
