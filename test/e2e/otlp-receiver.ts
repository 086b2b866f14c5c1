/**
 * An OTLP/HTTP trace receiver for the tracing tests: a plain node:http server taking the JSON the
 * daemon's exporter posts to /v1/traces, keeping every span (attributes as plain values) and every
 * request's headers, and waking waiters on each request, so tests wait on spans, never on time.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  links: { traceId: string; spanId: string; attributes: Record<string, unknown> }[];
  status: { code: number; message?: string };
  resource: Record<string, unknown>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}
type OtlpAttribute = { key: string; value: OtlpValue };

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return null;
}

function attributesOf(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  readonly bodies: string[] = [];
  readonly headers: IncomingHttpHeaders[] = [];
  private readonly waiters = new Set<() => void>();
  private readonly server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      this.take(req.url ?? '', req.headers, Buffer.concat(chunks).toString('utf8'));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  static async start(): Promise<OtlpReceiver> {
    const receiver = new OtlpReceiver();
    await new Promise<void>((resolve) => receiver.server.listen(0, '127.0.0.1', resolve));
    return receiver;
  }

  /** The base URL, as `telemetry.otlp_endpoint` takes it. */
  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves with `find`'s answer once it has one (checked on every request received). */
  until<T>(find: (spans: ReceivedSpan[]) => T | undefined | null | false, timeoutMs = 30_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const check = (): boolean => {
        const found = find(this.spans);
        if (found === undefined || found === null || found === false) return false;
        this.waiters.delete(check);
        clearTimeout(timer);
        resolve(found);
        return true;
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(
            `the spans awaited did not arrive; received: ${this.spans.map((s) => s.name).join(', ')}`,
          ),
        );
      }, timeoutMs);
      if (!check()) this.waiters.add(check);
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private take(url: string, headers: IncomingHttpHeaders, body: string): void {
    if (url !== '/v1/traces') throw new Error(`unexpected OTLP path ${url}`);
    this.bodies.push(body);
    this.headers.push(headers);
    const parsed = JSON.parse(body) as {
      resourceSpans?: {
        resource?: { attributes?: OtlpAttribute[] };
        scopeSpans?: {
          spans?: {
            traceId: string;
            spanId: string;
            parentSpanId?: string;
            name: string;
            kind: number;
            attributes?: OtlpAttribute[];
            links?: { traceId: string; spanId: string; attributes?: OtlpAttribute[] }[];
            status?: { code?: number; message?: string };
          }[];
        }[];
      }[];
    };
    for (const rs of parsed.resourceSpans ?? []) {
      const resource = attributesOf(rs.resource?.attributes);
      for (const ss of rs.scopeSpans ?? [])
        for (const span of ss.spans ?? [])
          this.spans.push({
            traceId: span.traceId,
            spanId: span.spanId,
            parentSpanId: span.parentSpanId ?? '',
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
            links: (span.links ?? []).map((l) => ({
              traceId: l.traceId,
              spanId: l.spanId,
              attributes: attributesOf(l.attributes),
            })),
            status: {
              code: span.status?.code ?? 0,
              ...(span.status?.message ? { message: span.status.message } : {}),
            },
            resource,
          });
    }
    for (const wake of [...this.waiters]) wake();
  }
}
