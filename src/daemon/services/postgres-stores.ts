/**
 * The gateway's stores on PostgreSQL (`store.kind: postgres`), with the cluster's event stream and
 * notifications when `cluster.enabled`. Loaded by stores.ts only for a postgres store, so a daemon
 * on SQLite never loads `pg` (docs/decisions.md, issue 33).
 */
import type { GatehouseConfig } from '../config-schema.js';
import { DaemonError, oneLine } from '../errors.js';
import type { Logger } from '../logger.js';
import type { LeaseHolder } from '../../domain/cluster/lease.js';
import { PostgresClusterStore } from '../../storage/postgres/cluster-store.js';
import { PostgresControlRelayStore } from '../../storage/postgres/control-relay-store.js';
import { PostgresDeliveryLedger } from '../../storage/postgres/delivery-ledger.js';
import { PostgresJobStore } from '../../storage/postgres/job-store.js';
import { PostgresDelegationStore } from '../../storage/postgres/delegation-store.js';
import { PostgresAccessStore } from '../../storage/postgres/access-store.js';
import { PostgresLocalStore } from '../../storage/postgres/local-store.js';
import { PostgresPlatformCursors } from '../../storage/postgres/platform-cursors.js';
import { PostgresSessionStore } from '../../storage/postgres/session-store.js';
import { PgEventStream } from '../../storage/postgres/event-stream.js';
import { PgNotifications } from '../../storage/postgres/notifications.js';
import type { StreamNote, StreamSignals } from '../../domain/ports/event-stream.js';
import type { GatewayStores, OpenGatewayStoresOptions, OpenCluster } from './stores.js';

/** Opens the store whose URL is `url` (read from the variable `name`, which errors name instead). */
export async function openPostgresStores(
  options: OpenGatewayStoresOptions,
  name: string,
  url: string,
): Promise<GatewayStores> {
  const { config, logger } = options;
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
    jobs: new PostgresJobStore(sessions.db),
    delegations: new PostgresDelegationStore(sessions.db),
    access: new PostgresAccessStore(sessions.db),
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
    observeCommits: (listener) => {
      local.group.onCommitted = listener;
    },
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
