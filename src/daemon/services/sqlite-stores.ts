/**
 * The gateway's stores on the profile's SQLite file (`store.kind: sqlite`, the default). Loaded by
 * stores.ts only for a SQLite store.
 */
import { SqliteAccessStore } from '../../storage/sqlite/access-store.js';
import { SqliteDeliveryLedger } from '../../storage/sqlite/delivery-ledger.js';
import { SqliteJobStore } from '../../storage/sqlite/job-store.js';
import { SqliteDelegationStore } from '../../storage/sqlite/delegation-store.js';
import { SqliteLocalStore } from '../../storage/sqlite/local-store.js';
import { SqlitePlatformCursors } from '../../storage/sqlite/platform-cursors.js';
import { SqliteSessionStore } from '../../storage/sqlite/session-store.js';
import type { GatewayStores, OpenGatewayStoresOptions } from './stores.js';
import { packageFile } from '../../runtime/package-files.js';

export function openSqliteStores(options: OpenGatewayStoresOptions): GatewayStores {
  const { config, logger } = options;
  const sessions = SqliteSessionStore.open(options.stateDb, {
    backgroundCheckpoints: true,
    cacheMiB: config.store.sqlite_cache_mb,
    transcriptWorker: packageFile('dist', 'storage', 'sqlite', 'transcript-json-worker.js'),
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
    jobs: new SqliteJobStore(sessions.db),
    delegations: new SqliteDelegationStore(sessions.db),
    access: new SqliteAccessStore(sessions.db),
    messaging: {
      sessions,
      ledger: new SqliteDeliveryLedger(sessions.db),
      cursors: new SqlitePlatformCursors(sessions.db),
    },
    cluster: null,
    observeCommits: (listener) => {
      local.group.onCommitted = listener;
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
