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
import { createHash } from 'node:crypto';
import pg from 'pg';
import type { Sql } from './database.js';

/**
 * The NOTIFY channel `name` of a schema. Channels are per database, not per schema: instances on
 * different schemas of one database (parallel test files, two clusters sharing a server) must not
 * wake each other, nor read another cluster's epochs and ids in a wake-up. A channel is an
 * identifier of at most 63 bytes: a long schema name is replaced by a hash of it.
 */
export function schemaChannel(schema: string, name: string): string {
  const plain = `${name}_${schema}`;
  if (Buffer.byteLength(plain) <= 63) return plain;
  return `${name}_${createHash('sha256').update(schema).digest('hex').slice(0, 40)}`;
}

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
  /** Told once when the state next changes (listening() waiting for a connection). */
  private readonly stateWaiters = new Set<() => void>();
  /** The LISTEN statements sent on the current connection and not yet answered. */
  private readonly pendingListens = new Set<Promise<unknown>>();
  /** The last statement sent on each connection (see send); a lost connection's entry goes with it. */
  private readonly sending = new WeakMap<pg.Client, Promise<unknown>>();
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

  /**
   * Resolves once every channel subscribed so far is listened to on a live connection: a
   * notification sent after that reaches its handlers. A subscription made while connected sends
   * its LISTEN at once but is only in force when the server has answered it, and a notification
   * committed before that is not delivered; whoever acts on the assumption that it will be heard
   * (a test sending a wake-up) waits for this first. Waits through reconnects; never rejects.
   */
  async listening(): Promise<void> {
    for (;;) {
      if (this.state.kind === 'closed') return;
      if (this.state.kind === 'listening' && this.pendingListens.size === 0) return;
      if (this.state.kind === 'listening') {
        await Promise.all([...this.pendingListens]);
        continue;
      }
      await new Promise<void>((resolve) => {
        this.stateWaiters.add(resolve);
      });
    }
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
        this.send(this.state.client, `UNLISTEN ${quoted(channel)}`).catch((error: unknown) =>
          this.failed(error),
        );
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
    this.moveTo({ kind: 'closed' });
    this.channels.clear();
    if (state.kind === 'waiting') clearTimeout(state.timer);
    if (state.kind === 'listening') await state.client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.state.kind === 'closed') return;
    this.moveTo({ kind: 'connecting' });
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
      for (const channel of this.channels.keys()) await this.send(client, `LISTEN ${quoted(channel)}`);
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
    this.moveTo({ kind: 'listening', client });
    this.connections++;
    this.backoffMs = this.options.minBackoffMs ?? 100;
    if (first) return;
    for (const handler of [...this.reconnectHandlers]) handler();
    for (const set of this.channels.values()) for (const sub of [...set]) sub.onResubscribed?.();
  }

  private moveTo(state: State): void {
    this.state = state;
    const waiters = [...this.stateWaiters];
    this.stateWaiters.clear();
    for (const wake of waiters) wake();
  }

  private listen(client: pg.Client, channel: string): void {
    const sent = this.send(client, `LISTEN ${quoted(channel)}`).then(
      () => undefined,
      (error: unknown) => {
        this.failed(error);
        this.lost(client, error);
      },
    );
    this.pendingListens.add(sent);
    void sent.finally(() => this.pendingListens.delete(sent));
  }

  /**
   * Sends one statement on `client` after the ones sent before it have been answered: a pg client
   * given a second query while one runs queues it itself, a use pg deprecates (pg 9 refuses it),
   * and subscriptions come and go at any moment (a daemon stopping drops all of its channels at
   * once).
   */
  private send(client: pg.Client, text: string): Promise<void> {
    const previous = this.sending.get(client) ?? Promise.resolve();
    const sent = previous.then(async () => {
      await client.query(text);
    });
    this.sending.set(
      client,
      sent.catch(() => undefined),
    );
    return sent;
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
    this.moveTo({ kind: 'waiting', timer });
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
