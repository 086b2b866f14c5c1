/** Test helpers for the runtime: an in-memory transcript, a scripted prompt host, tiny providers. */
import { EventEmitter, once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TranscriptMessage } from '../../../src/domain/vocabulary.js';
import type {
  ApprovalOutcome,
  ApprovalRequest,
  ClarifyOutcome,
  ClarifyRequest,
  PromptHost,
  TranscriptSink,
  TurnEvent,
  TurnScope,
} from '../../../src/runtime/types.js';

export class MemorySink implements TranscriptSink {
  readonly messages: TranscriptMessage[] = [];
  append(_sessionId: string, messages: TranscriptMessage[]): void {
    this.messages.push(...messages);
  }
}

/** Answers every prompt with fixed outcomes and records what it was asked, with its scope. */
export class ScriptedPrompts implements PromptHost {
  readonly asked: { scope: TurnScope; request: ApprovalRequest | ClarifyRequest }[] = [];
  constructor(
    private readonly approval: ApprovalOutcome = { kind: 'approved', choice: 'once' },
    private readonly clarify: ClarifyOutcome = { kind: 'skipped' },
  ) {}
  requestApproval(scope: TurnScope, request: ApprovalRequest): Promise<ApprovalOutcome> {
    this.asked.push({ scope, request });
    return Promise.resolve(this.approval);
  }
  askClarify(scope: TurnScope, request: ClarifyRequest): Promise<ClarifyOutcome> {
    this.asked.push({ scope, request });
    return Promise.resolve(this.clarify);
  }
}

/**
 * Checks the transcript invariant: every assistant tool call is followed by exactly one tool result
 * for it, and every tool result answers a call. Returns the problems found.
 */
export function transcriptProblems(messages: TranscriptMessage[]): string[] {
  const problems: string[] = [];
  const open = new Map<string, number>();
  for (const m of messages) {
    for (const call of m.tool_calls ?? []) open.set(call.id, 0);
    if (m.role === 'tool') {
      const id = m.tool_call_id ?? '';
      if (!open.has(id)) problems.push(`tool result ${id} answers no call`);
      else open.set(id, open.get(id)! + 1);
    }
  }
  for (const [id, count] of open) if (count !== 1) problems.push(`call ${id} has ${count} results`);
  return problems;
}

export function eventTypes(events: TurnEvent[]): string[] {
  return events.map((e) => e.type);
}

export interface FakeRequest {
  headers: http.IncomingHttpHeaders;
  body: { messages: { role: string; content: string | null; tool_call_id?: string }[] } & Record<
    string,
    unknown
  >;
}

export type FakeHandler = (
  req: http.IncomingMessage,
  res: http.ServerResponse,
  body: FakeRequest['body'],
) => void;

/**
 * A tiny provider on 127.0.0.1:0: the n-th request is answered by handlers[n] (the last handler
 * answers any further ones). Records every request.
 */
export async function startFakeProvider(handlers: FakeHandler[]) {
  const requests: FakeRequest[] = [];
  const arrivals = new EventEmitter();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as FakeRequest['body'];
      requests.push({ headers: req.headers, body });
      arrivals.emit('request');
      const handler = handlers[Math.min(requests.length, handlers.length) - 1]!;
      handler(req, res, body);
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    /** Resolves once at least n requests arrived. */
    waitForRequests(n: number): Promise<void> {
      return new Promise((resolve) => {
        const check = () => {
          if (requests.length < n) return;
          arrivals.off('request', check);
          resolve();
        };
        arrivals.on('request', check);
        check();
      });
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** Streams chat-completion chunks (each a delta for choice 0) and `[DONE]`. */
export function sseAnswer(deltas: Record<string, unknown>[], finish = 'stop'): FakeHandler {
  return (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const delta of deltas) {
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`);
    }
    res.write(`data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: finish }] })}\n\n`);
    res.end('data: [DONE]\n\n');
  };
}

export const textAnswer = (text: string): FakeHandler => sseAnswer([{ content: text }]);

export function toolCallAnswer(calls: { id: string; name: string; arguments: string }[]): FakeHandler {
  return sseAnswer(
    calls.map((c, index) => ({
      tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } }],
    })),
    'tool_calls',
  );
}

export function status(code: number, body: unknown, headers: Record<string, string> = {}): FakeHandler {
  return (_req, res) => {
    res.writeHead(code, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
}

/** A promise with its resolve function, for tests that wait on something happening. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
