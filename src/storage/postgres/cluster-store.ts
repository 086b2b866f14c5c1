/**
 * ClusterStore on PostgreSQL (SCL-1): the instance row, the generic leases and the wake-ups, on the
 * store's own connection (so a lease statement queues behind the turn path's commits like any other
 * write) plus the one LISTEN connection of notifications.ts.
 */
import type { LeaseHolder, LeaseKind } from '../../domain/cluster/lease.js';
import type {
  BotLeaseView,
  ClusterStore,
  HeldLease,
  InstanceView,
  TakeResult,
} from '../../domain/ports/cluster-store.js';
import type { PgDatabase } from './database.js';
import { notify, schemaChannel, type PgNotifications } from './notifications.js';
import * as sessions from './ops/cluster-sessions.js';
import * as instances from './ops/instances.js';
import * as leases from './ops/leases.js';

export class PostgresClusterStore implements ClusterStore {
  constructor(
    private readonly db: PgDatabase,
    private readonly listener: PgNotifications,
    readonly holder: LeaseHolder,
  ) {}

  register(name: string | null): Promise<void> {
    return this.db.transaction((sql) => instances.registerInstance(sql, this.holder, name));
  }

  setUrl(url: string): Promise<void> {
    return this.db.exclusive((sql) => instances.setInstanceUrl(sql, this.holder, url));
  }

  heartbeat(leaseS: number): Promise<HeldLease[]> {
    return this.db.exclusive((sql) => leases.heartbeat(sql, this.holder, leaseS));
  }

  take(kind: LeaseKind, name: string, leaseS: number): Promise<TakeResult> {
    return this.db.exclusive((sql) => leases.takeLease(sql, kind, name, this.holder, leaseS));
  }

  release(kind: LeaseKind, name: string): Promise<boolean> {
    return this.db.exclusive((sql) => leases.releaseLease(sql, kind, name, this.holder));
  }

  releaseAll(kind: LeaseKind, keep: readonly string[]): Promise<string[]> {
    return this.db.exclusive((sql) => leases.releaseAll(sql, kind, this.holder, keep));
  }

  releaseIdleSession(logicalId: string): Promise<boolean> {
    return this.db.exclusive((sql) => sessions.releaseIdleSession(sql, logicalId, this.holder));
  }

  ownerlessSessions(limit: number): Promise<string[]> {
    return this.db.exclusive((sql) => sessions.ownerlessSessions(sql, limit));
  }

  queuedUnder(limit: number): Promise<string[]> {
    return this.db.exclusive((sql) => sessions.queuedUnder(sql, this.holder, limit));
  }

  markDraining(): Promise<void> {
    return this.db.exclusive((sql) => instances.markDraining(sql, this.holder));
  }

  markStopped(): Promise<void> {
    return this.db.exclusive((sql) => instances.markStopped(sql, this.holder));
  }

  instances(forgetAfterS: number): Promise<InstanceView[]> {
    return this.db.exclusive((sql) => instances.listInstances(sql, forgetAfterS));
  }

  botLeases(): Promise<BotLeaseView[]> {
    return this.db.exclusive((sql) => instances.listBotLeases(sql));
  }

  /** Channels are the schema's own (schemaChannel): another schema's cluster never hears them. */
  notify(channel: string, payload: string): Promise<void> {
    return this.db.exclusive((sql) => notify(sql, schemaChannel(this.db.schema, channel), payload));
  }

  subscribe(channel: string, handler: (payload: string) => void, resubscribed?: () => void): () => void {
    return this.listener.subscribe(schemaChannel(this.db.schema, channel), {
      handler,
      ...(resubscribed ? { onResubscribed: resubscribed } : {}),
    });
  }
}
