/**
 * Opens the gateway's stores on the backend the config selects (`store.kind`): the session store,
 * the local-session store and the messaging stores (delivery ledger, platform cursors) on one database — the profile's SQLite file, or the PostgreSQL
 * database whose URL is in the environment variable `store.url_env` names. The URL is read from the
 * environment only: it is never written to a file or a log, and errors name the variable instead.
 */
import type { GatehouseConfig } from '../config.js';
import { DaemonError, oneLine } from '../errors.js';
import type { Logger } from '../logger.js';
import type { LocalSessionStore, StoreFaults } from '../../storage/local-store.js';
import type { MessagingStores } from '../../storage/messaging-stores.js';
import { PostgresDeliveryLedger } from '../../storage/postgres/delivery-ledger.js';
import { PostgresLocalStore } from '../../storage/postgres/local-store.js';
import { PostgresPlatformCursors } from '../../storage/postgres/platform-cursors.js';
import { PostgresSessionStore } from '../../storage/postgres/session-store.js';
import type { SessionStore } from '../../storage/session-store.js';
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
  /** The `storage` block of runtime.describe. */
  describe(): StorageCounters;
  close(): Promise<void>;
}

export async function openGatewayStores(options: {
  config: GatehouseConfig;
  env: NodeJS.ProcessEnv;
  stateDb: string;
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
      sessions = await PostgresSessionStore.open(url);
    } catch (error) {
      throw new DaemonError(
        'start_failed',
        `cannot open the PostgreSQL store whose URL is in ${name}: ${oneLine(error)}`,
        { cause: error },
      );
    }
    const local = new PostgresLocalStore(sessions.db, () => new Date(), options.faults);
    return {
      kind: 'postgres',
      label: `postgres (schema ${sessions.db.schema}, URL from $${name})`,
      sessions,
      local,
      messaging: {
        sessions,
        ledger: new PostgresDeliveryLedger(sessions.db),
        cursors: new PostgresPlatformCursors(sessions.db),
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
      close: () => sessions.close(),
    };
  }
  const sessions = SqliteSessionStore.open(options.stateDb, { backgroundCheckpoints: true });
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
    sessions,
    local,
    messaging: {
      sessions,
      ledger: new SqliteDeliveryLedger(sessions.db),
      cursors: new SqlitePlatformCursors(sessions.db),
    },
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
