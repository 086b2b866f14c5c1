/**
 * GET /metrics, the Prometheus text (docs/observability.md, "Access"). Without a configured key it
 * answers only a peer on loopback that is not relaying anyone (no forwarding header), with a Host
 * naming this listener (the transport check, against DNS rebinding); with `metrics.bearer_key_env`
 * set, any peer the listener accepts that presents `Authorization: Bearer <key>`, and nobody else.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpRejection } from '../../protocol/errors.js';
import { isLoopbackAddress, type RequestFacts } from './gate.js';

export interface MetricsRoute {
  /** The bearer key every scrape must present, or null: loopback peers only. */
  readonly key: string | null;
  /** The exposition text and its content type, gathered at scrape time. */
  render(): Promise<{ contentType: string; body: string }>;
}

const FORWARDING = ['forwarded', 'x-forwarded-for', 'x-real-ip'];

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/** Why this scrape is refused, or null when it may have the metrics. */
export function metricsRefusal(
  req: IncomingMessage,
  facts: RequestFacts,
  key: string | null,
): HttpRejection | null {
  if (key === null) {
    const relayed = FORWARDING.some((h) => req.headers[h] !== undefined);
    if (!isLoopbackAddress(facts.remoteAddress) || relayed) {
      return new HttpRejection(
        'remote_denied',
        'metrics are served to loopback peers only: set metrics.bearer_key_env to scrape from elsewhere',
      );
    }
    return null;
  }
  const header = req.headers.authorization;
  if (header === undefined) return new HttpRejection('missing', 'metrics need Authorization: Bearer <key>');
  const offered = /^Bearer (.+)$/.exec(header)?.[1] ?? '';
  return timingSafeEqual(digest(offered), digest(key))
    ? null
    : new HttpRejection('forged', 'wrong metrics key');
}

export async function serveMetrics(res: ServerResponse, route: MetricsRoute): Promise<void> {
  const { contentType, body } = await route.render();
  res.writeHead(200, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(body),
    'cache-control': 'no-store',
  });
  res.end(body);
}
