/** Real servers and real clients for the RPC surface tests. */
import { request } from 'node:http';
import { z } from 'zod';
import WebSocket, { type ClientOptions } from 'ws';
import { TicketBook, type TicketBookOptions } from '../../../src/domain/auth/tickets.js';
import {
  makePrincipal,
  OPERATOR_CAPABILITIES,
  WORKER_CAPABILITIES,
} from '../../../src/domain/auth/principal.js';
import { Dispatcher, type CallerContext } from '../../../src/protocol/dispatcher.js';
import type { Logger } from '../../../src/protocol/logger.js';
import { registerBuiltinMethods } from '../../../src/surfaces/rpc/builtins.js';
import type { RpcContext } from '../../../src/surfaces/rpc/connection.js';
import { startRpcServer, type RpcServer, type RpcServerOptions } from '../../../src/surfaces/rpc/server.js';

export interface RecordingLogger extends Logger {
  lines: Array<{ level: string; details: object; message: string }>;
}

export function recordingLogger(): RecordingLogger {
  const lines: RecordingLogger['lines'] = [];
  const at =
    (level: string) =>
    (details: object, message: string): void => {
      lines.push({ level, details, message });
    };
  return { lines, info: at('info'), warn: at('warn'), error: at('error') };
}

export const OWNER = { subject: 'native:owner', profile: 'default' };

/** Caller contexts for dispatcher tests: the owner (operator capabilities) and a worker. */
export const OPERATOR_CALLER: CallerContext = {
  principal: makePrincipal('native:owner', 'native', 'default', OPERATOR_CAPABILITIES),
};
export const WORKER_CALLER: CallerContext = {
  principal: makePrincipal('worker:1', 'worker', 'default', WORKER_CAPABILITIES),
};

export function testDispatcher(logger: Logger, recorded: number[] = []): Dispatcher<RpcContext> {
  const dispatcher = new Dispatcher<RpcContext>(logger);
  registerBuiltinMethods(dispatcher, {
    authority: () => ({ instance_id: 'inst-test', epoch: 7 }),
    creationContract: () => ({ sources: ['cli'], parameters: { cwd: 'absolute directory' } }),
  });
  // Stands in for session.create until the gateway registers the real one.
  dispatcher.register('test.create', {
    params: z.strictObject({}),
    capability: 'session:create',
    handler: () => ({ created: true }),
  });
  // Records the order handlers start in; the later the call, the sooner it finishes.
  dispatcher.register('test.record', {
    params: z.strictObject({ n: z.number().int() }),
    capability: null,
    handler: async ({ n }) => {
      recorded.push(n);
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, 20 - n)));
      return n;
    },
  });
  // A reply of any size the caller asks for (the history of a long session, say).
  dispatcher.register('test.big', {
    params: z.strictObject({ bytes: z.number().int().min(0) }),
    capability: null,
    handler: ({ bytes }) => ({ pad: 'x'.repeat(bytes) }),
  });
  // A long list (a history of many messages, say): a reply streamed in fragments. `ticks`
  // notifications are sent once the loop is free again, while that reply is on its way.
  dispatcher.register('test.many', {
    params: z.strictObject({ items: z.number().int().min(0), ticks: z.number().int().min(0) }),
    capability: null,
    handler: ({ items, ticks }, context) => {
      setImmediate(() => {
        for (let n = 1; n <= ticks; n++) context.connection.notify('test.tick', { n });
      });
      return { items: Array.from({ length: items }, (_, n) => ({ n, text: `item ${n} ✓ 😀` })) };
    },
  });
  return dispatcher;
}

export interface Harness {
  server: RpcServer;
  tickets: TicketBook;
  logger: RecordingLogger;
  wsUrl: string;
  /** Arguments of test.record calls, in the order their handlers started. */
  recorded: number[];
}

export async function startHarness(
  options: Partial<RpcServerOptions> & { ticketOptions?: TicketBookOptions } = {},
): Promise<Harness> {
  const logger = recordingLogger();
  const tickets = options.tickets ?? new TicketBook(options.ticketOptions);
  const recorded: number[] = [];
  const server = await startRpcServer({
    dispatcher: testDispatcher(logger, recorded),
    logger,
    ...options,
    tickets,
  });
  return { server, tickets, logger, recorded, wsUrl: `${server.url.replace('http', 'ws')}/api/ws` };
}

export function ticketProtocols(ticket: string): string[] {
  return ['gatehouse.v1', `gatehouse-ticket.${ticket}`];
}

type Message = {
  id?: number;
  method?: string;
  result?: unknown;
  error?: { code: number; data: { reason: string } };
};

/** A JSON-RPC client over a real `ws` socket. */
export class Client {
  readonly notifications: Message[] = [];
  private nextId = 1;
  private readonly pending = new Map<number, (message: Message) => void>();
  private readonly watchers: Array<() => void> = [];

  constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const message = JSON.parse(data.toString('utf8')) as Message;
      if (message.id !== undefined && this.pending.has(message.id)) {
        this.pending.get(message.id)!(message);
        this.pending.delete(message.id);
      } else {
        this.notifications.push(message);
        for (const watch of this.watchers.splice(0)) watch();
      }
    });
  }

  call(method: string, params?: unknown): Promise<Message> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.ws.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Resolves once at least `count` notifications arrived. */
  async untilNotifications(count: number): Promise<void> {
    while (this.notifications.length < count)
      await new Promise<void>((resolve) => this.watchers.push(resolve));
  }

  close(): void {
    this.ws.close();
  }
}

export function connect(url: string, protocols: string[] = [], options: ClientOptions = {}): Promise<Client> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, options);
    ws.once('open', () => resolve(new Client(ws)));
    ws.once('error', reject);
  });
}

/** Attempts an upgrade that must fail; resolves with the HTTP status and JSON body. */
export function rejectedUpgrade(
  url: string,
  protocols: string[] = [],
  options: ClientOptions = {},
): Promise<{ status: number; body: { error: { reason: string; message: string } } }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, options);
    ws.on('error', () => {});
    ws.once('open', () => {
      ws.close();
      reject(new Error('the upgrade was unexpectedly accepted'));
    });
    ws.once('unexpected-response', (req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        req.destroy();
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as never });
      });
    });
  });
}

export interface HttpReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Record<string, unknown>;
}

export function httpPost(
  base: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<HttpReply> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    const req = request(
      new URL(path, base),
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...headers,
        },
      },
      (res) => {
        let reply = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (reply += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: JSON.parse(reply) as Record<string, unknown>,
          }),
        );
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}
