/**
 * PostgreSQL LISTEN/NOTIFY for one instance: one dedicated connection (a LISTEN holds its
 * connection; the store's connection runs statements in turn and cannot wait on it), any number of
 * channels and handlers on it. The cluster's wake-ups (leases) and its event fan-out share it.
 *
 *   connecting ──connected──▶ listening ──error/end──▶ waiting ──backoff──▶ connecting …
 *   any ──close──▶ closed
 *
 * Notifications are a wake-up, never the record: one sent while the connection was down is lost,
 * so after every reconnect the `onReconnect` handlers (and each subscription's `onResubscribed`)
 * are told, and look at the database again. The first connection is not a reconnect, unless the
 * first attempt failed. Errors never reach the caller; they are reported to `onError` and retried.
 */
import pg from 'pg';
import type { Sql } from './database.js';

export type NotificationHandler = (payload: string) => void;

export interface Subscription {
  /** Called with each notification's payload on the channel. */
  handler: NotificationHandler;
  /** Called after the connection came back (notifications may have been lost meanwhile). */
  onResubscribed?: () => void;
}

export interface NotificationsOptions {
  /** First retry after this many ms, doubling up to `maxBackoffMs`. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** How the server lists the connection (pg_stat_activity); default `gatehouse-listen`. */
  applicationName?: string;
  /** Told about every loss of the connection (logs); never sees the URL. */
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
    await notifications.ready;
    return notifications;
  }

  private state: State = { kind: 'connecting' };
  private readonly channels = new Map<string, Set<Subscription>>();
  private readonly reconnectHandlers = new Set<() => void>();
  private backoffMs: number;
  private firstAttempt = true;
  /** Connections made (the first included): tests and status read it. */
  connections = 0;
  /** Resolves once the first attempt to connect ended (listening, or failed and retrying). */
  readonly ready: Promise<void>;

  /** Starts connecting at once; `open` also waits for the first attempt. */
  constructor(
    private readonly url: string,
    private readonly options: NotificationsOptions = {},
  ) {
    this.backoffMs = options.minBackoffMs ?? 100;
    this.ready = this.connect();
  }

  get stateName(): State['kind'] {
    return this.state.kind;
  }

  get listening(): boolean {
    return this.state.kind === 'listening';
  }

  /** Delivers every payload sent on `channel`; the returned function unsubscribes. */
  subscribe(channel: string, subscription: Subscription | NotificationHandler): () => void {
    const sub = typeof subscription === 'function' ? { handler: subscription } : subscription;
    let set = this.channels.get(channel);
    if (!set) {
      set = new Set();
      this.channels.set(channel, set);
      if (this.state.kind === 'listening') this.listen(this.state.client, channel);
    }
    set.add(sub);
    return () => {
      const current = this.channels.get(channel);
      if (!current?.delete(sub) || current.size > 0) return;
      this.channels.delete(channel);
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
    this.channels.clear();
    if (state.kind === 'waiting') clearTimeout(state.timer);
    if (state.kind === 'listening') await state.client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.state.kind === 'closed') return;
    this.state = { kind: 'connecting' };
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.options.applicationName ?? 'gatehouse-listen',
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('the listening connection ended')));
    client.on('notification', (message) => {
      const set = this.channels.get(message.channel);
      for (const sub of [...(set ?? [])]) sub.handler(message.payload ?? '');
    });
    const first = this.firstAttempt;
    this.firstAttempt = false;
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${quoted(channel)}`);
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
    if (first) return;
    for (const handler of [...this.reconnectHandlers]) handler();
    for (const set of this.channels.values()) for (const sub of [...set]) sub.onResubscribed?.();
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
    client.removeAllListeners('notification');
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

/** Sends a notification in the statement's transaction (delivered when it commits). */
export async function notify(sql: Sql, channel: string, payload: string): Promise<void> {
  await sql.run('SELECT pg_notify($1, $2)', [channel, payload]);
}
