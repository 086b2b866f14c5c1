/**
 * Opens the gateway's stores on the backend the config selects (`store.kind`): the session store,
 * the local-session store and the messaging stores (delivery ledger, platform cursors) on one database — the profile's SQLite file, or the PostgreSQL
 * database whose URL is in the environment variable `store.url_env` names. The URL is read from the
 * environment only: it is never written to a file or a log, and errors name the variable instead.
 */
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError, oneLine } from '../errors.js';
import type { Logger } from '../logger.js';
import type { LeaseHolder } from '../../domain/cluster/lease.js';
import type { ClusterStore } from '../../domain/ports/cluster-store.js';
import type { LocalSessionStore, StoreFaults } from '../../domain/ports/local-store.js';
import type { MessagingStores } from '../../domain/ports/messaging-stores.js';
import { PostgresClusterStore } from '../../storage/postgres/cluster-store.js';
import { PostgresControlRelayStore } from '../../storage/postgres/control-relay-store.js';
import type { ControlRelayStore } from '../../domain/ports/control-relay.js';
import { PostgresDeliveryLedger } from '../../storage/postgres/delivery-ledger.js';
import { PostgresLocalStore } from '../../storage/postgres/local-store.js';
import { PostgresPlatformCursors } from '../../storage/postgres/platform-cursors.js';
import { PostgresSessionStore } from '../../storage/postgres/session-store.js';
import { PgEventStream } from '../../storage/postgres/event-stream.js';
import { PgNotifications } from '../../storage/postgres/notifications.js';
import type { SharedEventStore, StreamNote, StreamSignals } from '../../domain/ports/event-stream.js';
import type { SessionStore } from '../../domain/ports/session-store.js';
import { SqliteDeliveryLedger } from '../../storage/sqlite/delivery-ledger.js';
import { SqliteLocalStore } from '../../storage/sqlite/local-store.js';
import { SqlitePlatformCursors } from '../../storage/sqlite/platform-cursors.js';
import { SqliteSessionStore } from '../../storage/sqlite/session-store.js';
import type { StorageCounters } from '../../surfaces/rpc/builtins.js';

export interface GatewayStores {
  kind: 'sqlite' | 'postgres';
  /** What was opened, for `gatehouse status`: the file, or the schema and the URL's variable (never the URL). */
  label: string;
  sessions: SessionStore;
  local: LocalSessionStore;
  /** What chat platforms store through, on the same database. */
  messaging: MessagingStores;
  /** Cluster mode (`cluster.enabled`): the shared event stream and its notifications; else null. */
  cluster: { events: SharedEventStore; signals: StreamSignals } | null;
  /** The `storage` block of runtime.describe. */
  describe(): StorageCounters;
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

export async function openGatewayStores(options: {
  config: GatehouseConfig;
  env: NodeJS.ProcessEnv;
  stateDb: string;
  /** This run's instance id (named in the server's list of connections). */
  instanceId: string;
  faults: StoreFaults | null;
  logger: Logger;
}): Promise<GatewayStores> {
  const { config, env, logger } = options;
  if (config.store.kind === 'postgres') {
    const name = config.store.url_env!;
    const url = env[name];
    if (url === undefined || url === '') {
      throw new DaemonError(
        'start_failed',
        `store.kind is postgres but ${name} (store.url_env) is not set: export ${name}=postgres://… in the daemon's environment, then start again`,
      );
    }
    let sessions: PostgresSessionStore;
    try {
      // The instance's id in the connection's name: an operator (or a test) finds its connections.
      sessions = await PostgresSessionStore.open(url, {
        applicationName: `gatehouse ${options.instanceId.slice(0, 8)}`,
      });
    } catch (error) {
      throw new DaemonError(
        'start_failed',
        `cannot open the PostgreSQL store whose URL is in ${name}: ${oneLine(error)}`,
        { cause: error },
      );
    }
    const local = new PostgresLocalStore(sessions.db, () => new Date(), options.faults);
    let cluster: Awaited<ReturnType<typeof openClusterStream>> | null = null;
    if (config.cluster.enabled) {
      try {
        cluster = await openClusterStream(url, config, logger, options.instanceId);
      } catch (error) {
        await sessions.close().catch(() => undefined);
        throw new DaemonError(
          'start_failed',
          `cannot open the cluster's event stream on the PostgreSQL store whose URL is in ${name}: ${oneLine(error)}`,
          { cause: error },
        );
      }
    }
    // The instance's one LISTEN connection serves its leases' wake-ups and its event fan-out.
    const notifications = cluster?.notifications ?? null;
    const openCluster = notifications
      ? (holder: LeaseHolder, token: (logicalId: string) => number | null): OpenCluster => {
          local.fenceByLeases({ holder, token });
          return {
            store: new PostgresClusterStore(sessions.db, notifications, holder),
            relay: new PostgresControlRelayStore(sessions.db, notifications, holder),
            failed: () => sessions.db.failed !== null,
            close: () => Promise.resolve(),
          };
        }
      : null;
    const ledger = new PostgresDeliveryLedger(sessions.db);
    const cursors = new PostgresPlatformCursors(sessions.db);
    return {
      kind: 'postgres',
      label: `postgres (schema ${sessions.db.schema}, URL from $${name})`,
      openCluster,
      sessions,
      local,
      messaging: {
        sessions,
        ledger,
        cursors,
        fenceByBots: (fence) => {
          ledger.fenceByBots(fence);
          cursors.fenceByBots(fence);
        },
      },
      cluster: cluster && { events: cluster.events, signals: cluster.signals },
      describe: () => {
        const { stats } = local.group;
        return {
          backend: 'postgres',
          writable: sessions.db.failed === null,
          commit_batches: stats.batches,
          committed_operations: stats.operations,
          // Each group COMMIT is one log flush, made by the server; it checkpoints on its own.
          log_flushes: stats.batches,
          inline_flushes: 0,
          checkpoints: 0,
          checkpoint_failures: 0,
        };
      },
      close: async () => {
        await cluster?.close();
        await sessions.close();
      },
    };
  }
  const sessions = SqliteSessionStore.open(options.stateDb, {
    backgroundCheckpoints: true,
    cacheMiB: config.store.sqlite_cache_mb,
  });
  const local = new SqliteLocalStore(sessions.db, () => new Date(), options.faults);
  local.group.onFailure((failure) =>
    logger.error(
      { file: failure.file, reason: failure.reason },
      `${failure.message}: every write is refused until the daemon restarts`,
    ),
  );
  return {
    kind: 'sqlite',
    label: `sqlite (${options.stateDb})`,
    openCluster: null,
    sessions,
    local,
    messaging: {
      sessions,
      ledger: new SqliteDeliveryLedger(sessions.db),
      cursors: new SqlitePlatformCursors(sessions.db),
    },
    cluster: null,
    describe: () => {
      const { stats, failed } = local.group;
      return {
        backend: 'sqlite',
        writable: failed === null,
        commit_batches: stats.batches,
        committed_operations: stats.operations,
        log_flushes: stats.flushes,
        inline_flushes: stats.inlineFlushes,
        checkpoints: sessions.checkpointer?.stats.checkpoints ?? 0,
        checkpoint_failures: sessions.checkpointer?.stats.failures ?? 0,
      };
    },
    close: () => sessions.close(),
  };
}

/**
 * The shared event stream on its own connection, and the instance's LISTEN connection subscribed
 * to the schema's channel (docs/cluster.md). A malformed note is logged and dropped: the next note
 * or reconnect of that session reads the stream anyway.
 */
async function openClusterStream(url: string, config: GatehouseConfig, logger: Logger, instanceId: string) {
  const events = await PgEventStream.open(url, {
    maxEvents: config.events.replay_max_events,
    maxBytes: config.events.replay_max_bytes,
  });
  let notifications: PgNotifications;
  try {
    notifications = await PgNotifications.open(url, {
      applicationName: `gatehouse-listen ${instanceId.slice(0, 8)}`,
      onError: (error) =>
        logger.warn({ err: oneLine(error) }, 'cluster notifications: connection trouble, retrying'),
    });
  } catch (error) {
    await events.close().catch(() => undefined);
    throw error;
  }
  const signals: StreamSignals = {
    subscribe: (handler) =>
      notifications.subscribe(events.channel, (payload) => {
        const note = parseNote(payload);
        if (note) handler(note);
        else
          logger.warn(
            { payload: payload.slice(0, 200) },
            'cluster notifications: a malformed note was dropped',
          );
      }),
    onReconnect: (handler) => notifications.onReconnect(handler),
  };
  return {
    events,
    signals,
    notifications,
    close: async () => {
      await notifications.close();
      await events.close();
    },
  };
}

function parseNote(payload: string): StreamNote | null {
  try {
    const note = JSON.parse(payload) as Partial<StreamNote>;
    if (typeof note.logical_id === 'string' && Number.isInteger(note.epoch) && Number.isInteger(note.seq))
      return note as StreamNote;
  } catch {
    // Falls through: not a note.
  }
  return null;
}
