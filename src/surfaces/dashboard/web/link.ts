/**
 * The page's one WebSocket to the daemon, as a state machine:
 *
 *   idle → connecting → open → (socket closed) → waiting → connecting → …
 *                     ↘ signed_out (the cookie is gone: the login page takes over)
 *   any → stopped (logout)
 *
 * Each connect fetches a new ws-ticket from the cookie, so a daemon restart (which forgets every
 * ticket and connection) is survived by simply connecting again; listeners are told `open` with
 * `reconnected: true` and resync their sessions from their cursors.
 */
import { SignedOut, wsTicket } from './auth.js';

export type LinkState = 'idle' | 'connecting' | 'open' | 'waiting' | 'signed_out' | 'stopped';

export class RpcError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly data: Record<string, unknown>,
  ) {
    super(message);
  }
}

/** The call could not be answered: the connection closed first. It may or may not have run. */
export class Disconnected extends Error {
  constructor() {
    super('the connection to the gateway closed');
  }
}

interface Pending {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

export interface LinkListener {
  state?(state: LinkState): void;
  open?(reconnected: boolean): void;
  notification?(method: string, params: Record<string, unknown>): void;
}

const MAX_BACKOFF_MS = 4000;

/**
 * Reconnect attempts in a row after which the page stops saying only "reconnecting…": a daemon
 * that restarted on another address (its port was taken) never answers here again.
 */
export const LOST_AFTER = 4;

export class Link {
  state: LinkState = 'idle';
  private socket: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<LinkListener>();
  private opens = 0;
  /** Reconnect attempts since the socket was last open; LOST_AFTER or more: `lost`. */
  private failures = 0;
  private backoffMs = 200;
  private timer: ReturnType<typeof setTimeout> | null = null;

  /** The gateway has not answered at this address for LOST_AFTER attempts in a row. */
  get lost(): boolean {
    return this.failures >= LOST_AFTER;
  }

  listen(listener: LinkListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** idle | waiting | signed_out → connecting. */
  start(): void {
    if (this.state === 'connecting' || this.state === 'open') return;
    this.opens = this.state === 'signed_out' ? 0 : this.opens;
    void this.connect();
  }

  /** → stopped: no reconnect until start(). */
  stop(): void {
    this.move('stopped');
    if (this.timer) clearTimeout(this.timer);
    this.socket?.close(1000);
    this.socket = null;
  }

  call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const socket = this.socket;
    if (this.state !== 'open' || !socket) return Promise.reject(new Disconnected());
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve, reject });
      socket.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
    });
  }

  private move(state: LinkState): void {
    this.state = state;
    for (const l of this.listeners) l.state?.(state);
  }

  private async connect(): Promise<void> {
    this.move('connecting');
    let ticket: string;
    try {
      ticket = await wsTicket();
    } catch (error) {
      if (error instanceof SignedOut) return this.move('signed_out');
      return this.retryLater();
    }
    if (this.state !== 'connecting') return;
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${scheme}//${location.host}/api/ws?ticket=${encodeURIComponent(ticket)}`, [
      'gatehouse.v1',
    ]);
    this.socket = socket;
    socket.onopen = () => {
      this.backoffMs = 200;
      this.failures = 0;
      this.move('open');
      const reconnected = this.opens++ > 0;
      for (const l of this.listeners) l.open?.(reconnected);
    };
    socket.onmessage = (message: MessageEvent<string>) => this.receive(message.data);
    socket.onclose = () => {
      if (this.socket !== socket) return;
      this.socket = null;
      for (const p of this.pending.values()) p.reject(new Disconnected());
      this.pending.clear();
      if (this.state !== 'stopped') this.retryLater();
    };
  }

  /** → waiting, then connecting again after a growing pause (a restarting daemon needs a moment). */
  private retryLater(): void {
    if (this.state === 'stopped') return;
    this.failures++;
    this.move('waiting');
    this.timer = setTimeout(() => void this.connect(), this.backoffMs);
    this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
  }

  private receive(text: string): void {
    let message: {
      id?: number;
      result?: unknown;
      error?: { code: number; message: string; data?: Record<string, unknown> };
      method?: string;
      params?: Record<string, unknown>;
    };
    try {
      message = JSON.parse(text) as typeof message;
    } catch {
      return;
    }
    if (typeof message.id === 'number' && this.pending.has(message.id)) {
      const pending = this.pending.get(message.id)!;
      this.pending.delete(message.id);
      if (message.error) {
        const data = message.error.data ?? {};
        pending.reject(
          new RpcError(
            message.error.code,
            typeof data['reason'] === 'string' ? data['reason'] : 'error',
            message.error.message,
            data,
          ),
        );
      } else pending.resolve(message.result);
      return;
    }
    if (message.method)
      for (const l of this.listeners) l.notification?.(message.method, message.params ?? {});
  }
}
