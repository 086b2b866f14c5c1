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
