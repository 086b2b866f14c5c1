/**
 * Opens the metrics when `metrics.enabled` (else null, and prom-client is never loaded): reads the
 * scrape key from the variable `metrics.bearer_key_env` names, refusing to start when it is named
 * but unset, and imports metrics.ts.
 */
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError } from '../errors.js';
import type { GatewayMetrics, MetricsSources } from './metrics.js';

export async function openMetrics(
  config: GatehouseConfig,
  env: NodeJS.ProcessEnv,
  sources: MetricsSources,
): Promise<GatewayMetrics | null> {
  if (!config.metrics.enabled) return null;
  const name = config.metrics.bearer_key_env;
  const key = name === undefined ? null : (env[name] ?? '');
  if (key !== null && key.length < 16) {
    throw new DaemonError(
      'config_invalid',
      `metrics.bearer_key_env names $${name}, which is ${key === '' ? 'not set' : 'shorter than 16 characters'}: ` +
        'set it to the scrape key, or remove the key to serve metrics to loopback only',
    );
  }
  const { createMetrics } = await import('./metrics.js');
  return createMetrics(sources, key);
}
