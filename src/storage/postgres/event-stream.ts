/**
 * The shared event stream on PostgreSQL (src/domain/ports/event-stream.ts): on a connection of its own,
 * so the stream of events a running turn publishes never queues behind admissions and settlements
 * on the store's connection. Each append is one transaction for every session in the batch (the
 * caller batches: group commit), with one NOTIFY per session on the schema's channel.
 */
import type {
  AppendedRun,
  SharedEventStore,
  StreamHead,
  StreamRetention,
  StreamRun,
} from '../../domain/ports/event-stream.js';
import { PgDatabase } from './database.js';
import { schemaChannel } from './notifications.js';
import * as ops from './ops/session-events.js';

/** The schema's NOTIFY channel of appended runs (`gatehouse_events_<schema>`). */
export function eventChannel(schema: string): string {
  return schemaChannel(schema, 'gatehouse_events');
}

export class PgEventStream implements SharedEventStore {
  static async open(url: string, retention: StreamRetention): Promise<PgEventStream> {
    const db = await PgDatabase.open(url);
    const schema = await db.row<{ schema: string }>('SELECT current_schema() AS schema');
    return new PgEventStream(db, eventChannel(schema!.schema), retention);
  }

  constructor(
    readonly db: PgDatabase,
    /** Where appends are announced: subscribe to it with PgNotifications. */
    readonly channel: string,
    private readonly retention: StreamRetention,
  ) {}

  open(logicalId: string, epoch: number): Promise<StreamHead> {
    return this.db.transaction((sql) => ops.openStream(sql, logicalId, epoch));
  }

  append(runs: readonly StreamRun[], epoch: number): Promise<AppendedRun[]> {
    // Sessions are locked in one order by every instance, so two batches never deadlock.
    const ordered = [...runs].sort((a, b) =>
      a.logical_id < b.logical_id ? -1 : a.logical_id > b.logical_id ? 1 : 0,
    );
    return this.db.transaction(async (sql) => {
      const appended: AppendedRun[] = [];
      for (const run of ordered) {
        const done = await ops.appendRun(sql, run, epoch, this.retention);
        await ops.notifyRun(sql, this.channel, done, done.first_seq + run.events.length - 1);
        appended.push(done);
      }
      return appended;
    });
  }

  read(logicalId: string, afterSeq: number, limit: number) {
    return this.db.exclusive((sql) => ops.readStream(sql, logicalId, afterSeq, limit));
  }

  prune(): Promise<number> {
    return this.db.transaction((sql) => ops.pruneStreams(sql, this.retention));
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
