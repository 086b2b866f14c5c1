/**
 * PostgreSQL LISTEN/NOTIFY for one instance: one dedicated connection (a LISTEN holds its
 * connection; the store's connection runs statements in turn and cannot wait on it), any number of
 * channels and handlers on it.
 *
 *   connecting ──connected──▶ listening ──error/end──▶ waiting ──backoff──▶ connecting …
 *   any ──close──▶ closed
 *
 * A notification sent while the connection was down is lost, so after every reconnect the
 * `onReconnect` handlers are told: they rescan what they follow. The first connection is not a
 * reconnect. Errors never reach the caller; they are reported to `onError` and retried.
 */
import pg from 'pg';

export interface NotificationsOptions {
  /** First retry after this many ms, doubling up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  onError?: (error: unknown) => void;
}

type State =
  | { kind: 'connecting' }
  | { kind: 'listening'; client: pg.Client }
  | { kind: 'waiting'; timer: NodeJS.Timeout }
  | { kind: 'closed' };

function quoted(channel: string): string {
  return `"${channel.replace(/"/g, '""')}"`;
}

export class PgNotifications {
  /**
   * Connects; resolves after the first attempt. When that attempt fails it goes on retrying, and
   * the connection that finally listens counts as a reconnect (notes may have been missed).
   */
  static async open(url: string, options: NotificationsOptions = {}): Promise<PgNotifications> {
    const notifications = new PgNotifications(url, options);
    await notifications.connect();
    return notifications;
  }

  private state: State = { kind: 'connecting' };
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private backoffMs: number;
  private firstAttempt = true;
  /** Connections made (the first included): tests and status read it. */
  connections = 0;

  private constructor(
    private readonly url: string,
    private readonly options: NotificationsOptions,
  ) {
    this.backoffMs = options.minBackoffMs ?? 100;
  }

  get stateName(): State['kind'] {
    return this.state.kind;
  }

  /** `handler` gets every payload sent on `channel`; the returned function unsubscribes. */
  subscribe(channel: string, handler: (payload: string) => void): () => void {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      if (this.state.kind === 'listening') this.listen(this.state.client, channel);
    }
    set.add(handler);
    return () => {
      const current = this.handlers.get(channel);
      if (!current?.delete(handler) || current.size > 0) return;
      this.handlers.delete(channel);
      if (this.state.kind === 'listening') {
        this.state.client.query(`UNLISTEN ${quoted(channel)}`).catch((error: unknown) => this.failed(error));
      }
    };
  }

  /** Told after each reconnect (never after the first connection). */
  onReconnect(handler: () => void): () => void {
    this.reconnectHandlers.add(handler);
    return () => this.reconnectHandlers.delete(handler);
  }

  async close(): Promise<void> {
    const state = this.state;
    this.state = { kind: 'closed' };
    if (state.kind === 'waiting') clearTimeout(state.timer);
    if (state.kind === 'listening') await state.client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.state.kind === 'closed') return;
    this.state = { kind: 'connecting' };
    const client = new pg.Client({ connectionString: this.url, application_name: 'gatehouse-listen' });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('the listening connection ended')));
    client.on('notification', (message) => {
      const set = this.handlers.get(message.channel);
      for (const handler of [...(set ?? [])]) handler(message.payload ?? '');
    });
    const first = this.firstAttempt;
    this.firstAttempt = false;
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${quoted(channel)}`);
    } catch (error) {
      await client.end().catch(() => undefined);
      this.failed(error);
      this.retry();
      return;
    }
    // close() may have run while this connected.
    if ((this.state as State).kind === 'closed') {
      await client.end().catch(() => undefined);
      return;
    }
    this.state = { kind: 'listening', client };
    this.connections++;
    this.backoffMs = this.options.minBackoffMs ?? 100;
    if (!first) for (const handler of [...this.reconnectHandlers]) handler();
  }

  private listen(client: pg.Client, channel: string): void {
    client.query(`LISTEN ${quoted(channel)}`).catch((error: unknown) => {
      this.failed(error);
      this.lost(client, error);
    });
  }

  private lost(client: pg.Client, error: unknown): void {
    if (this.state.kind !== 'listening' || this.state.client !== client) return;
    this.failed(error);
    client.end().catch(() => undefined);
    this.retry();
  }

  private retry(): void {
    if (this.state.kind === 'closed') return;
    const timer = setTimeout(() => void this.connect(), this.backoffMs);
    timer.unref();
    this.state = { kind: 'waiting', timer };
    this.backoffMs = Math.min(this.backoffMs * 2, this.options.maxBackoffMs ?? 5_000);
  }

  private failed(error: unknown): void {
    this.options.onError?.(error);
  }
}
