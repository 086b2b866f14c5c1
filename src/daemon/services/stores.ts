/**
 * Opens the gateway's stores on the backend the config selects (`store.kind`): the session store,
 * the local-session store and the messaging stores (delivery ledger, platform cursors) on one database — the profile's SQLite file, or the PostgreSQL
 * database whose URL is in the environment variable `store.url_env` names. The URL is read from the
 * environment only: it is never written to a file or a log, and errors name the variable instead.
 * Each backend is in a module of its own (sqlite-stores.ts, postgres-stores.ts), loaded only when
 * selected: a daemon on SQLite never loads `pg`.
 */
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { LeaseHolder } from '../../domain/cluster/lease.js';
import type { AccessStore } from '../../domain/ports/access-store.js';
import type { ClusterStore } from '../../domain/ports/cluster-store.js';
import type { JobStore } from '../../domain/ports/job-store.js';
import type { DelegationStore } from '../../domain/ports/delegation-store.js';
import type { LocalSessionStore, StoreFaults } from '../../domain/ports/local-store.js';
import type { MessagingStores } from '../../domain/ports/messaging-stores.js';
import type { ControlRelayStore } from '../../domain/ports/control-relay.js';
import type { SharedEventStore, StreamSignals } from '../../domain/ports/event-stream.js';
import type { SessionStore } from '../../domain/ports/session-store.js';
import type { StorageCounters } from '../../surfaces/rpc/builtins.js';

export interface GatewayStores {
  kind: 'sqlite' | 'postgres';
  /** What was opened, for `gatehouse status`: the file, or the schema and the URL's variable (never the URL). */
  label: string;
  sessions: SessionStore;
  local: LocalSessionStore;
  /** Scheduled jobs and their runs (docs/scheduling.md), on the same database. */
  jobs: JobStore;
  /** Background delegations (docs/scheduling.md), on the same database. */
  delegations: DelegationStore;
  /** Session shares and the audit log (migration 022). */
  access: AccessStore;
  /** What chat platforms store through, on the same database. */
  messaging: MessagingStores;
  /** Cluster mode (`cluster.enabled`): the shared event stream and its notifications; else null. */
  cluster: { events: SharedEventStore; signals: StreamSignals } | null;
  /** The `storage` block of runtime.describe. */
  describe(): StorageCounters;
  /** Tells `listener` each group commit's seconds, from its transaction's start to durable (metrics). */
  observeCommits(listener: (seconds: number) => void): void;
  /**
   * With cluster.enabled (postgres only): the cluster's store for this instance, with its own LISTEN
   * connection; its session leases fence the local store's turn path from now on.
   */
  openCluster: ((holder: LeaseHolder, token: (logicalId: string) => number | null) => OpenCluster) | null;
  close(): Promise<void>;
}

export interface OpenCluster {
  store: ClusterStore;
  /** The control relay's requests and answers (issue 14). */
  relay: ControlRelayStore;
  /** Whether the store's connection is lost (it then refuses every operation). */
  failed(): boolean;
  close(): Promise<void>;
}

export interface OpenGatewayStoresOptions {
  config: GatehouseConfig;
  env: NodeJS.ProcessEnv;
  stateDb: string;
  /** This run's instance id (named in the server's list of connections). */
  instanceId: string;
  faults: StoreFaults | null;
  logger: Logger;
}

export async function openGatewayStores(options: OpenGatewayStoresOptions): Promise<GatewayStores> {
  const { config, env } = options;
  if (config.store.kind === 'postgres') {
    const name = config.store.url_env!;
    const url = env[name];
    if (url === undefined || url === '') {
      throw new DaemonError(
        'start_failed',
        `store.kind is postgres but ${name} (store.url_env) is not set: export ${name}=postgres://… in the daemon's environment, then start again`,
      );
    }
    const { openPostgresStores } = await import('./postgres-stores.js');
    return openPostgresStores(options, name, url);
  }
  const { openSqliteStores } = await import('./sqlite-stores.js');
  return openSqliteStores(options);
}
