/**
 * The OpenTelemetry side of turn traces (runtime/tracing.ts is the contract; docs/observability.md
 * "Traces" the spans). Loaded only when `telemetry.otlp_endpoint` is set: tracing-setup.ts imports
 * this file, and with it the OpenTelemetry SDK, at start.
 *
 * Nothing global: no context manager and no global tracer provider are registered; every parent
 * is passed by hand (the engines hold their turn's span), so nothing else in the process is traced.
 *
 * A turn never waits for the collector. Ended spans go to a bounded queue (QUEUE_SPANS); while it
 * is full, spans are dropped and counted (`dropped`), never buffered further. Exports run in the
 * background with a timeout; `close` flushes with a bounded wait.
 *
 * The trace and root span ids of a run of a turn are derived from its turn id and run number
 * (runIds): a resumed run links to the run a crash interrupted by recomputing its ids, with nothing
 * stored (SHA-256, so distinct turns never share a trace in practice).
 */
import { createHash } from 'node:crypto';
import {
  context,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  RandomIdGenerator,
  type IdGenerator,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import {
  SPAN,
  type SpanOptions,
  type TraceAttributes,
  type TraceSpan,
  type TurnRun,
  type TurnTracer,
} from '../../runtime/tracing.js';

/** Ended spans waiting for export at most; more are dropped (and counted) until an export drains them. */
export const QUEUE_SPANS = 2048;
const BATCH_SPANS = 512;
const BATCH_DELAY_MS = 1000;
/** One export request's limit: a collector that does not answer holds no more than this. */
const EXPORT_TIMEOUT_MS = 10_000;

export interface TracingOptions {
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  url: string;
  headers: Record<string, string>;
  captureContent: boolean;
  version: string;
  instanceId: string;
}

export interface GatewayTracing {
  readonly tracer: TurnTracer;
  /** Spans dropped so far because the queue was full (an unreachable or slow collector). */
  dropped(): number;
  /** Exports what is queued, waiting at most `timeoutMs`, then stops. */
  close(timeoutMs: number): Promise<void>;
}

/** The ids of a run of a turn: its trace and its root span. */
export function runIds(run: TurnRun): { traceId: string; spanId: string } {
  const digest = createHash('sha256').update(`gatehouse-turn\0${run.turnId}\0${run.run}`).digest('hex');
  return { traceId: digest.slice(0, 32), spanId: digest.slice(32, 48) };
}

/** Random ids, except for the root span of a run of a turn, whose ids runIds gives. */
class TurnIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  next: { traceId: string; spanId: string } | null = null;

  generateTraceId(): string {
    return this.next?.traceId ?? this.random.generateTraceId();
  }

  generateSpanId(): string {
    return this.next?.spanId ?? this.random.generateSpanId();
  }
}

/**
 * The exporter, counting what it holds: a span is queued from its end until its batch's export
 * answers (or times out). Past QUEUE_SPANS, spans are dropped here, so the batch processor's own
 * queue never fills and the count is exact.
 */
type ExportDone = Parameters<SpanExporter['export']>[1];
type ExportResult = Parameters<ExportDone>[0];
/** ExportResultCode.FAILED (@opentelemetry/core, not a dependency of ours). */
const EXPORT_FAILED = 1;

class CountingExporter implements SpanExporter {
  pending = 0;
  dropped = 0;

  constructor(private readonly inner: SpanExporter) {}

  export(spans: ReadableSpan[], done: ExportDone): void {
    let answered = false;
    const answer = (result: ExportResult): void => {
      if (answered) return;
      answered = true;
      this.pending -= spans.length;
      done(result);
    };
    try {
      this.inner.export(spans, answer);
    } catch (error) {
      answer({ code: EXPORT_FAILED, error: error as Error });
    }
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

export function createTracing(options: TracingOptions): GatewayTracing {
  const ids = new TurnIds();
  const exporter = new CountingExporter(
    new OTLPTraceExporter({ url: options.url, headers: options.headers, timeoutMillis: EXPORT_TIMEOUT_MS }),
  );
  const batches = new BatchSpanProcessor(exporter, {
    maxQueueSize: QUEUE_SPANS,
    maxExportBatchSize: BATCH_SPANS,
    scheduledDelayMillis: BATCH_DELAY_MS,
    exportTimeoutMillis: EXPORT_TIMEOUT_MS,
  });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: 'gatehouse',
      [ATTR_SERVICE_VERSION]: options.version,
      'service.instance.id': options.instanceId,
    }),
    idGenerator: ids,
    spanProcessors: [
      {
        onStart: (span, parent) => batches.onStart(span, parent),
        onEnd: (span) => {
          if (exporter.pending >= QUEUE_SPANS) {
            exporter.dropped++;
            return;
          }
          exporter.pending++;
          batches.onEnd(span);
        },
        forceFlush: () => batches.forceFlush(),
        shutdown: () => batches.shutdown(),
      },
    ],
  });
  const tracer = provider.getTracer('gatehouse');
  const capture = options.captureContent;

  const root = (
    name: string,
    attributes: TraceAttributes,
    links: Link[],
    startTime?: number,
    own?: TurnRun,
  ) => {
    ids.next = own ? runIds(own) : null;
    try {
      return new OtelSpan(
        tracer,
        tracer.startSpan(name, {
          attributes: clean(attributes),
          links,
          ...(startTime === undefined ? {} : { startTime }),
        }),
        capture,
      );
    } finally {
      ids.next = null;
    }
  };

  return {
    tracer: {
      turn: (run, attributes, opts) =>
        root(
          SPAN.turn,
          { ...attributes, 'gatehouse.turn.id': run.turnId, 'gatehouse.turn.run': run.run },
          run.run > 0 ? [linkTo({ turnId: run.turnId, run: run.run - 1 }, 'resumes')] : [],
          opts?.startTime,
          run,
        ),
      linked: (name, to, attributes) => root(name, attributes, [linkTo(to, 'recovers')]),
    },
    dropped: () => exporter.dropped,
    close: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      const limit = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
        timer.unref();
      });
      await Promise.race([provider.forceFlush().catch(() => undefined), limit]);
      clearTimeout(timer);
      // Whatever the collector did not take by now is given up: stopping never waits on it longer.
      void provider.shutdown().catch(() => undefined);
    },
  };
}

function linkTo(run: TurnRun, relation: string): Link {
  const { traceId, spanId } = runIds(run);
  return {
    context: { traceId, spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true },
    attributes: {
      'gatehouse.link': relation,
      'gatehouse.turn.id': run.turnId,
      'gatehouse.turn.run': run.run,
    },
  };
}

class OtelSpan implements TraceSpan {
  private ended = false;
  private readonly parent: Context;

  constructor(
    private readonly tracer: Tracer,
    private readonly span: Span,
    readonly captureContent: boolean,
  ) {
    this.parent = trace.setSpan(context.active(), span);
  }

  child(name: string, attributes: TraceAttributes = {}, options: SpanOptions = {}): TraceSpan {
    const span = this.tracer.startSpan(
      name,
      {
        attributes: clean(attributes),
        kind: options.client ? SpanKind.CLIENT : SpanKind.INTERNAL,
        ...(options.startTime === undefined ? {} : { startTime: options.startTime }),
      },
      this.parent,
    );
    return new OtelSpan(this.tracer, span, this.captureContent);
  }

  set(attributes: TraceAttributes): void {
    if (!this.ended) this.span.setAttributes(clean(attributes));
  }

  fail(reason: string, message?: string): void {
    if (this.ended) return;
    this.span.setAttribute('error.type', reason);
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: message ?? reason });
  }

  end(at?: number): void {
    if (this.ended) return;
    this.ended = true;
    this.span.end(at);
  }
}

function clean(attributes: TraceAttributes): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null) continue;
    out[key] = Array.isArray(value)
      ? [...(value as readonly string[])]
      : (value as string | number | boolean);
  }
  return out;
}
