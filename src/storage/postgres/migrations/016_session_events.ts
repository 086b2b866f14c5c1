/**
 * 016 on PostgreSQL: the published events of each session, shared by the instances of a cluster
 * (docs/cluster.md, "Events across instances").
 *
 * - `session_event_streams`: one row per session that ever had an event or a viewer in cluster mode.
 *   `epoch` is the authority epoch of the instance that started the stream (so it can never equal
 *   the epoch of a pre-cluster cursor of another stream); `last_seq` is the last number handed out.
 *   Appenders lock this row, so a session's events commit in sequence order.
 * - `session_events`: the retained events, a bounded tail per session (pruned by count and bytes).
 *   A number handed out without a row (pruned, or dropped by an overloaded publisher) is a gap,
 *   answered with snapshot_required, never skipped silently.
 */
import type { PgMigration } from '../migration.js';

export const migration: PgMigration = {
  version: 16,
  name: 'session_events',
  sql: `
    CREATE TABLE session_event_streams (
      logical_id TEXT PRIMARY KEY,
      epoch      BIGINT NOT NULL,
      last_seq   BIGINT NOT NULL
    );
    CREATE TABLE session_events (
      logical_id TEXT NOT NULL,
      seq        BIGINT NOT NULL,
      event      TEXT NOT NULL,
      bytes      INTEGER NOT NULL,
      PRIMARY KEY (logical_id, seq)
    );
  `,
};
