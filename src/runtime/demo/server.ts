/**
 * The demo model over real HTTP: an OpenAI-compatible server (`/v1/chat/completions`, streamed and
 * not, and `/v1/models`) answering by the script in script.ts. It is a scripted stand-in for a real
 * provider. It records every request (so tests see exactly what the model saw), can hold requests at
 * a barrier until released, and lets tests wait for the n-th request without polling.
 */
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  badSummaryCompletion,
  demoChunks,
  demoCompletion,
  demoOverflow,
  type DemoSummaryAnswer,
} from './model.js';
import { isSummaryRequest } from './summary.js';
import { DEMO_LABEL, DEMO_MODEL_ID, type DemoRequestBody } from './script.js';

export interface DemoModelOptions {
  host?: string;
  /** 0 picks a free port. */
  port?: number;
  /** Pause between two streamed pieces, in milliseconds. */
  latencyMs?: number;
  /** Keep every request in `requests` (tests). A long-running daemon turns this off. Default true. */
  record?: boolean;
  /**
   * The context window in tokens: a request over it is refused with HTTP 400 and OpenAI's
   * `context_length_exceeded` error, as a real provider does. Unset: no limit.
   */
  contextWindow?: number;
  /** Report each answer's cost in `usage.cost` (OpenRouter's field), at this many US dollars per million tokens. */
  reportCostPerMTok?: number;
  /** How summary requests are answered (tests of bad summarisers); default `summary`. */
  summaries?: DemoSummaryAnswer;
}

/** A request as the demo model received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** The parsed JSON body (null for GET or a body that is not JSON). */
  body: DemoRequestBody | null;
  /** When it arrived (ms since the epoch). */
  received_at: number;
  /**
   * When its exchange ended — answered, or its connection closed (a client killed mid-stream) —
   * null while it is open. Two requests of one turn's session never overlap in time.
   */
  finished_at: number | null;
}

export interface DemoModelServer {
  /** `http://host:port` */
  url: string;
  /** `http://host:port/v1`: what a client's base_url should be. */
  baseUrl: string;
  /** Every request received, in arrival order (recorded before any barrier). */
  readonly requests: RecordedRequest[];
  /** Makes requests that arrive from now on wait until release(). */
  hold(): void;
  /** Lets every held request go on, and stops holding new ones. */
  release(): void;
  /** From now on, answers summary requests this way (model.ts DemoSummaryAnswer). */
  answerSummaries(answer: DemoSummaryAnswer): void;
  /** Resolves once at least `n` requests have arrived. */
  waitForRequests(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startDemoModel(options: DemoModelOptions = {}): Promise<DemoModelServer> {
  const host = options.host ?? '127.0.0.1';
  const latencyMs = options.latencyMs ?? 0;
  const requests: RecordedRequest[] = [];
  const arrivals = new EventEmitter();
  let barrier: { promise: Promise<void>; open: () => void } | null = null;
  let sequence = 0;
  let summaries: DemoSummaryAnswer = options.summaries ?? 'summary';

  const server = http.createServer((req, res) => {
    void handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({ error: { message: 'The demo model failed unexpectedly.', type: 'server_error' } }),
      );
    });
  });

  async function handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body: DemoRequestBody | null = null;
    let badJson = false;
    if (raw) {
      try {
        body = JSON.parse(raw) as DemoRequestBody;
      } catch {
        badJson = true;
      }
    }
    const path = (req.url ?? '/').split('?')[0]!;
    if (options.record !== false) {
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path,
        headers: req.headers,
        body,
        received_at: Date.now(),
        finished_at: null,
      };
      requests.push(recorded);
      res.once('close', () => (recorded.finished_at = Date.now()));
    }
    arrivals.emit('request', requests.length);
    if (barrier) await barrier.promise;

    if (req.method === 'GET' && path === '/v1/models') {
      return json(res, 200, {
        object: 'list',
        data: [{ id: DEMO_MODEL_ID, object: 'model', created: 0, owned_by: 'gatehouse (scripted stand-in)' }],
      });
    }
    if (path !== '/v1/chat/completions' || req.method !== 'POST') {
      return json(res, 404, {
        error: { message: `${DEMO_LABEL}: no such endpoint ${path}`, type: 'not_found' },
      });
    }
    if (badJson || !body || !Array.isArray(body.messages)) {
      return json(res, 400, {
        error: {
          message: `${DEMO_LABEL}: the request body must be JSON with a messages array.`,
          type: 'invalid_request_error',
        },
      });
    }
    const overflow = demoOverflow(body, options.contextWindow);
    if (overflow !== null) return json(res, 400, overflow);
    const id = `chatcmpl-demo-${++sequence}`;
    if (summaries !== 'summary' && isSummaryRequest(body.messages)) {
      // Never answered: the client's timeout ends it (close() drops the connection).
      if (summaries === 'hang') return;
      const [status, answer] = badSummaryCompletion(summaries, body, id);
      return json(res, status, answer);
    }
    if (body.stream !== true)
      return json(res, 200, demoCompletion(body, id, options.contextWindow, options.reportCostPerMTok));

    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    });
    for (const chunk of demoChunks(body, id, options.contextWindow, options.reportCostPerMTok)) {
      if (res.destroyed) return;
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      if (latencyMs > 0) await sleep(latencyMs);
    }
    res.end('data: [DONE]\n\n');
  }

  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  return {
    url,
    baseUrl: `${url}/v1`,
    requests,
    hold() {
      if (barrier) return;
      let open!: () => void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      barrier = { promise, open };
    },
    release() {
      barrier?.open();
      barrier = null;
    },
    answerSummaries(answer: DemoSummaryAnswer) {
      summaries = answer;
    },
    waitForRequests(n: number): Promise<void> {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve) => {
        const listener = (count: number) => {
          if (count < n) return;
          arrivals.off('request', listener);
          resolve();
        };
        arrivals.on('request', listener);
      });
    },
    async close() {
      barrier?.open();
      barrier = null;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function json(res: http.ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * `gatehouse demo-model [--port N]`: serves the demo model until the process is stopped. Prints the
 * base_url to configure, and says plainly that it is a scripted stand-in.
 */
export async function runDemoModelCommand(
  options: { port?: number; host?: string; latencyMs?: number } = {},
): Promise<DemoModelServer> {
  // A standalone server may run for days: it keeps no record of the requests it served.
  const server = await startDemoModel({ ...options, record: false });
  process.stdout.write(
    `${DEMO_LABEL} listening at ${server.baseUrl}\n` +
      `It is not a language model: it follows a fixed script (run: <command>, ask: <question>, think: <text>).\n` +
      `Use base_url ${server.baseUrl} with model ${DEMO_MODEL_ID} (no api_key needed).\n`,
  );
  return server;
}
