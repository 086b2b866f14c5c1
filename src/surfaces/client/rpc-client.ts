/**
 * A JSON-RPC client for the gateway's WebSocket endpoint: connects with a ticket (subprotocol pair
 * `gatehouse.v1, gatehouse-ticket.<ticket>`), sends requests with increasing ids, matches replies,
 * and hands `session.event` notifications to listeners. The chat client, the tests and the
 * benchmarks all use it.
 */
import { EventEmitter } from 'node:events';
import WebSocket from 'ws';
import { requestTicket } from '../control/client.js';

export class RpcCallError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
    this.name = 'RpcCallError';
  }
}

export class ConnectionClosedError extends Error {
  constructor(readonly code: number) {
    super(`connection closed (${code})`);
    this.name = 'ConnectionClosedError';
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export interface Notification {
  method: string;
  params: unknown;
}

export class GatewayClient {
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly emitter = new EventEmitter();
  private closedWith: number | null = null;

  private constructor(private readonly socket: WebSocket) {
    this.emitter.setMaxListeners(0);
    socket.on('message', (data: Buffer) => this.receive(data.toString('utf8')));
    socket.on('close', (code) => {
      this.closedWith = code;
      for (const p of this.pending.values()) p.reject(new ConnectionClosedError(code));
      this.pending.clear();
      this.emitter.emit('close', code);
    });
    socket.on('error', () => undefined);
  }

  /** Connects to `url` (http://host:port) with a native ticket. Rejects with the HTTP status on refusal. */
  static connect(
    url: string,
    ticket: string,
    options: { headers?: Record<string, string> } = {},
  ): Promise<GatewayClient> {
    const wsUrl = `${url.replace(/^http/, 'ws')}/api/ws`;
    return GatewayClient.open(new WebSocket(wsUrl, ['gatehouse.v1', `gatehouse-ticket.${ticket}`], options));
  }

  /** Connects with whatever credentials the caller arranged (cookie header, query ticket, …). */
  static open(socket: WebSocket): Promise<GatewayClient> {
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(new GatewayClient(socket)));
      socket.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => reject(new Error(`upgrade refused (${res.statusCode}): ${body}`)));
      });
      socket.once('error', reject);
    });
  }

  /** Gets a ticket from the daemon's control socket and connects. */
  static async connectLocal(
    url: string,
    socketPath: string,
    purpose: 'interactive' | 'worker-adoption' = 'interactive',
  ): Promise<GatewayClient> {
    const { ticket } = await requestTicket(socketPath, purpose);
    return GatewayClient.connect(url, ticket);
  }

  get closed(): boolean {
    return this.closedWith !== null;
  }

  call<T = Record<string, unknown>>(method: string, params: unknown = {}): Promise<T> {
    if (this.closedWith !== null) return Promise.reject(new ConnectionClosedError(this.closedWith));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve, reject });
      this.socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  /** Sends a raw text frame (tests of malformed input). */
  sendRaw(text: string): void {
    this.socket.send(text);
  }

  onNotification(listener: (n: Notification) => void): () => void {
    this.emitter.on('notification', listener);
    return () => this.emitter.off('notification', listener);
  }

  onClose(listener: (code: number) => void): () => void {
    this.emitter.on('close', listener);
    return () => this.emitter.off('close', listener);
  }

  /** Resolves with the next notification matching `predicate`. */
  next(predicate: (n: Notification) => boolean, timeoutMs = 20_000): Promise<Notification> {
    if (this.closedWith !== null) return Promise.reject(new ConnectionClosedError(this.closedWith));
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        offNotification();
        offClose();
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching notification within ${timeoutMs} ms`));
      }, timeoutMs);
      const offNotification = this.onNotification((n) => {
        if (!predicate(n)) return;
        done();
        resolve(n);
      });
      // The daemon went away (killed, stopped): nothing more can arrive on this connection.
      const offClose = this.onClose((code) => {
        done();
        reject(new ConnectionClosedError(code));
      });
    });
  }

  close(): Promise<void> {
    if (this.closedWith !== null) return Promise.resolve();
    return new Promise((resolve) => {
      this.socket.once('close', () => resolve());
      this.socket.close();
    });
  }

  private receive(text: string): void {
    let frame: { id?: number | null; method?: string; params?: unknown; result?: unknown; error?: unknown };
    try {
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return;
    }
    if (frame.method !== undefined && frame.id === undefined) {
      this.emitter.emit('notification', { method: frame.method, params: frame.params });
      return;
    }
    if (typeof frame.id !== 'number') return;
    const pending = this.pending.get(frame.id);
    if (!pending) return;
    this.pending.delete(frame.id);
    if (frame.error) {
      const e = frame.error as {
        code: number;
        message: string;
        data?: { reason?: string; details?: unknown };
      };
      pending.reject(new RpcCallError(e.code, e.data?.reason ?? 'unknown', e.message, e.data?.details));
    } else {
      pending.resolve(frame.result);
    }
  }
}
