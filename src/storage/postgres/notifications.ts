/**
 * LISTEN/NOTIFY on PostgreSQL: one dedicated connection per instance that LISTENs on the channels
 * subscribed to, and reconnects (with backoff) when it is lost. Notifications are a wake-up, never
 * the record: one sent while the connection was down is lost, so each subscriber is told when the
 * connection is back (`onResubscribed`) and looks at the database again; a periodic rescan is the
 * subscriber's other safety net. Generic: the cluster's wake-ups use it, and so can event fan-out.
 *
 *   connecting ──connected──▶ listening ──error/end──▶ waiting (backoff) ──▶ connecting …
 *        any state ──close()──▶ closed
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
  /** Told about every loss of the connection (logs); never sees the URL. */
  onError?: (error: unknown) => void;
  /** Backoff between reconnects: doubles from min to max. */
  backoffMs?: { min: number; max: number };
  /** How the server lists the connection (pg_stat_activity); default `gatehouse-listen`. */
  applicationName?: string;
}

type State = 'connecting' | 'listening' | 'waiting' | 'closed';

/** A channel name as PostgreSQL takes it unquoted: lower-case letters, digits and underscores. */
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

export class PgNotifications {
  private state: State = 'connecting';
  private client: pg.Client | null = null;
  private readonly channels = new Map<string, Set<Subscription>>();
  private timer: NodeJS.Timeout | null = null;
  private backoff: number;
  private connectedOnce = false;
  /** Resolves once the first connection listens (or failed once: it keeps retrying). */
  readonly ready: Promise<void>;
  private markReady!: () => void;

  constructor(
    private readonly url: string,
    private readonly options: NotificationsOptions = {},
  ) {
    this.backoff = options.backoffMs?.min ?? 100;
    this.ready = new Promise((resolve) => (this.markReady = resolve));
    void this.connect();
  }

  /** Subscribes to `channel`; returns the unsubscribe. */
  subscribe(channel: string, subscription: Subscription | NotificationHandler): () => void {
    if (!CHANNEL.test(channel)) throw new Error(`invalid notification channel name: ${channel}`);
    const sub = typeof subscription === 'function' ? { handler: subscription } : subscription;
    let subs = this.channels.get(channel);
    if (!subs) {
      subs = new Set();
      this.channels.set(channel, subs);
      if (this.state === 'listening')
        this.client?.query(`LISTEN ${channel}`).catch((e: unknown) => this.lost(e));
    }
    subs.add(sub);
    return () => {
      const current = this.channels.get(channel);
      if (!current) return;
      current.delete(sub);
      if (current.size > 0) return;
      this.channels.delete(channel);
      if (this.state === 'listening') this.client?.query(`UNLISTEN ${channel}`).catch(() => undefined);
    };
  }

  get listening(): boolean {
    return this.state === 'listening';
  }

  private async connect(): Promise<void> {
    if (this.state === 'closed') return;
    this.state = 'connecting';
    const client = new pg.Client({
      connectionString: this.url,
      application_name: this.options.applicationName ?? 'gatehouse-listen',
    });
    this.client = client;
    client.on('error', (error) => this.lost(error, client));
    client.on('end', () => this.lost(new Error('the LISTEN connection ended'), client));
    client.on('notification', (message) => {
      for (const sub of this.channels.get(message.channel) ?? []) sub.handler(message.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.channels.keys()) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      this.lost(error, client);
      this.markReady();
      return;
    }
    if (this.client !== client || (this.state as State) === 'closed') return;
    this.state = 'listening';
    this.backoff = this.options.backoffMs?.min ?? 100;
    const again = this.connectedOnce;
    this.connectedOnce = true;
    this.markReady();
    if (again) for (const subs of this.channels.values()) for (const sub of subs) sub.onResubscribed?.();
  }

  private lost(error: unknown, client: pg.Client | null = this.client): void {
    if (this.state === 'closed' || client !== this.client || this.state === 'waiting') return;
    this.options.onError?.(error);
    this.state = 'waiting';
    this.client = null;
    client?.removeAllListeners('notification');
    void client?.end().catch(() => undefined);
    const delay = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.options.backoffMs?.max ?? 5000);
    this.timer = setTimeout(() => void this.connect(), delay);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.state = 'closed';
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    this.channels.clear();
    await client?.end().catch(() => undefined);
  }
}

/** Sends a notification in the statement's transaction (delivered when it commits). */
export async function notify(sql: Sql, channel: string, payload: string): Promise<void> {
  await sql.run('SELECT pg_notify($1, $2)', [channel, payload]);
}
