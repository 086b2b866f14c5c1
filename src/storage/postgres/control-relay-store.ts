/**
 * ControlRelayStore on PostgreSQL (issue 14): the requests on the store's own connection, the
 * wake-ups on the instance's one LISTEN connection (notifications.ts), sent in the same commit as
 * the row they announce.
 */
import type { LeaseHolder } from '../../domain/cluster/lease.js';
import {
  CONTROL_CHANNEL,
  formatControlNote,
  parseControlNote,
  type ClaimedControlRequest,
  type ControlNote,
  type ControlRelayStore,
  type ControlRequestState,
  type NewControlRequest,
} from '../../domain/ports/control-relay.js';
import type { PgDatabase } from './database.js';
import { notify, schemaChannel, type PgNotifications } from './notifications.js';
import * as ops from './ops/control-requests.js';

export class PostgresControlRelayStore implements ControlRelayStore {
  constructor(
    private readonly db: PgDatabase,
    private readonly listener: PgNotifications,
    readonly holder: LeaseHolder,
  ) {}

  /**
   * The schema's control channel: epochs and request ids are numbered per schema, so a note from
   * another schema's cluster on the same database would name requests that are not there.
   */
  private get channel(): string {
    return schemaChannel(this.db.schema, CONTROL_CHANNEL);
  }

  sessionOwner(logicalId: string): Promise<LeaseHolder | null> {
    return this.db.exclusive((sql) => ops.sessionOwner(sql, logicalId));
  }

  send(request: NewControlRequest): Promise<number> {
    return this.db.transaction(async (sql) => {
      const id = await ops.insertRequest(sql, this.holder, request);
      await notify(
        sql,
        this.channel,
        formatControlNote({ kind: 'request', epoch: request.target.epoch, id }),
      );
      return id;
    });
  }

  claim(limit: number): Promise<ClaimedControlRequest[]> {
    return this.db.exclusive((sql) => ops.claimRequests(sql, this.holder, limit));
  }

  answer(request: ClaimedControlRequest, answer: string): Promise<void> {
    return this.db.transaction(async (sql) => {
      await ops.writeAnswer(sql, request.id, answer);
      const note = formatControlNote({ kind: 'answer', epoch: request.sender_epoch, id: request.id });
      await notify(sql, this.channel, note);
    });
  }

  readAnswer(id: number): Promise<string | null> {
    return this.db.exclusive((sql) => ops.readAnswer(sql, id));
  }

  requestState(id: number): Promise<ControlRequestState | null> {
    return this.db.exclusive((sql) => ops.requestState(sql, id));
  }

  forget(id: number): Promise<void> {
    return this.db.exclusive((sql) => ops.deleteRequest(sql, id));
  }

  prune(graceS: number): Promise<number> {
    return this.db.exclusive((sql) => ops.pruneRequests(sql, graceS));
  }

  subscribe(handler: (note: ControlNote) => void, resubscribed: () => void): () => void {
    return this.listener.subscribe(this.channel, {
      handler: (payload) => {
        const note = parseControlNote(payload);
        if (note && note.epoch === this.holder.epoch) handler(note);
      },
      onResubscribed: resubscribed,
    });
  }
}
