/**
 * Opens turn tracing when `telemetry.otlp_endpoint` is set (else null, and OpenTelemetry is never
 * loaded): reads each header's value from the variable `telemetry.headers_env` names, refusing to
 * start when one is unset, and imports tracing.ts.
 */
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError } from '../errors.js';
import type { GatewayTracing } from './tracing.js';

/** How long a stopping daemon waits for the collector to take the spans still queued. */
export const TRACE_FLUSH_MS = 2_000;

export async function openTracing(
  config: GatehouseConfig,
  env: NodeJS.ProcessEnv,
  service: { version: string; instanceId: string },
): Promise<GatewayTracing | null> {
  const telemetry = config.telemetry;
  if (telemetry.otlp_endpoint === undefined) return null;
  const headers: Record<string, string> = {};
  for (const [header, name] of Object.entries(telemetry.headers_env)) {
    const value = env[name];
    if (value === undefined || value === '') {
      throw new DaemonError(
        'config_invalid',
        `telemetry.headers_env.${header} names $${name}, which is not set: set it to the header's value, or remove the header`,
      );
    }
    headers[header] = value;
  }
  const { createTracing } = await import('./tracing.js');
  return createTracing({
    url: `${telemetry.otlp_endpoint.replace(/\/+$/, '')}/v1/traces`,
    headers,
    captureContent: telemetry.capture_content,
    ...service,
  });
}
