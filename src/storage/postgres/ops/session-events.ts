/** The shared event stream's statements (migration 016; src/domain/ports/event-stream.ts). */
import type {
  AppendedRun,
  StoredStreamEvent,
  StreamHead,
  StreamRetention,
  StreamRun,
} from '../../../domain/ports/event-stream.js';
import type { Sql } from '../database.js';

const HEAD = `SELECT s.epoch, s.last_seq,
    (SELECT min(e.seq) FROM session_events e WHERE e.logical_id = s.logical_id) AS oldest_seq
  FROM session_event_streams s WHERE s.logical_id = $1`;

export async function streamHead(sql: Sql, logicalId: string): Promise<StreamHead | null> {
  return sql.row<StreamHead>(HEAD, [logicalId]);
}

export async function openStream(sql: Sql, logicalId: string, epoch: number): Promise<StreamHead> {
  await sql.run(
    `INSERT INTO session_event_streams (logical_id, epoch, last_seq) VALUES ($1, $2, 0)
     ON CONFLICT (logical_id) DO NOTHING`,
    [logicalId, epoch],
  );
  return (await streamHead(sql, logicalId))!;
}

/**
 * Numbers and stores one session's run. The upsert locks the stream's row until the commit, so
 * runs of one session from several instances commit in the order of their numbers. Events beyond
 * the count retention go at once; bytes are pruned by housekeeping.
 */
export async function appendRun(
  sql: Sql,
  run: StreamRun,
  epoch: number,
  retention: StreamRetention,
): Promise<AppendedRun> {
  const taken = run.skipped + run.events.length;
  const head = (await sql.row<{ epoch: number; last_seq: number }>(
    `INSERT INTO session_event_streams (logical_id, epoch, last_seq) VALUES ($1, $2, $3)
     ON CONFLICT (logical_id) DO UPDATE SET last_seq = session_event_streams.last_seq + EXCLUDED.last_seq
     RETURNING epoch, last_seq`,
    [run.logical_id, epoch, taken],
  ))!;
  const first = head.last_seq - run.events.length + 1;
  await sql.run(
    `INSERT INTO session_events (logical_id, seq, event, bytes)
     SELECT $1, $2 + t.ord - 1, t.ev, octet_length(t.ev)
     FROM unnest($3::text[]) WITH ORDINALITY AS t(ev, ord)`,
    [run.logical_id, first, run.events],
  );
  await sql.run('DELETE FROM session_events WHERE logical_id = $1 AND seq <= $2', [
    run.logical_id,
    head.last_seq - retention.maxEvents,
  ]);
  return { logical_id: run.logical_id, epoch: head.epoch, first_seq: first };
}

export async function notifyRun(sql: Sql, channel: string, run: AppendedRun, lastSeq: number): Promise<void> {
  // Delivered at the commit, and only if it commits: a listener never reads ahead of the rows.
  await sql.run('SELECT pg_notify($1, $2)', [
    channel,
    JSON.stringify({ logical_id: run.logical_id, epoch: run.epoch, seq: lastSeq }),
  ]);
}

export async function readStream(
  sql: Sql,
  logicalId: string,
  afterSeq: number,
  limit: number,
): Promise<{ head: StreamHead | null; events: StoredStreamEvent[] }> {
  const head = await streamHead(sql, logicalId);
  if (!head) return { head: null, events: [] };
  // Rows committed after the head was read are left for the next read: the answer stays a prefix
  // of the stream up to head.last_seq.
  const events = await sql.rows<StoredStreamEvent>(
    `SELECT seq, event FROM session_events WHERE logical_id = $1 AND seq > $2 AND seq <= $3
     ORDER BY seq LIMIT $4`,
    [logicalId, afterSeq, head.last_seq, limit],
  );
  return { head, events };
}

/** Drops, per session, the events past the newest `maxEvents` or past `maxBytes` counted from the newest. */
export async function pruneStreams(sql: Sql, retention: StreamRetention): Promise<number> {
  return sql.run(
    `DELETE FROM session_events e USING (
       SELECT logical_id, seq FROM (
         SELECT logical_id, seq,
           row_number() OVER w AS n,
           sum(bytes) OVER w AS b
         FROM session_events WINDOW w AS (PARTITION BY logical_id ORDER BY seq DESC)
       ) ranked WHERE n > $1 OR b > $2
     ) old
     WHERE e.logical_id = old.logical_id AND e.seq = old.seq`,
    [retention.maxEvents, retention.maxBytes],
  );
}
