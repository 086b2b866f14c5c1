/** The control relay's statements (migration 017; src/domain/ports/control-relay.ts). */
import type { LeaseHolder } from '../../../domain/cluster/lease.js';
import type {
  ClaimedControlRequest,
  ControlRequestState,
  NewControlRequest,
} from '../../../domain/ports/control-relay.js';
import type { Sql } from '../database.js';

export async function sessionOwner(sql: Sql, logicalId: string): Promise<LeaseHolder | null> {
  const row = await sql.row<{ owner_instance: string; owner_epoch: string | number }>(
    `SELECT owner_instance, owner_epoch FROM cluster_leases
      WHERE kind = 'session' AND name = $1 AND owner_epoch IS NOT NULL AND expires_at > now()`,
    [logicalId],
  );
  return row && { instance_id: row.owner_instance, epoch: Number(row.owner_epoch) };
}

export async function insertRequest(
  sql: Sql,
  sender: LeaseHolder,
  request: NewControlRequest,
): Promise<number> {
  const row = await sql.row<{ id: string | number }>(
    `INSERT INTO control_requests (sender_epoch, target_epoch, logical_id, kind, body, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) RETURNING id`,
    [
      sender.epoch,
      request.target.epoch,
      request.logical_id,
      request.kind,
      request.body,
      request.ttlMs / 1000,
    ],
  );
  return Number(row!.id);
}

/** Marks the requests claimed in the same statement that reads them: two passes never share one. */
export async function claimRequests(
  sql: Sql,
  me: LeaseHolder,
  limit: number,
): Promise<ClaimedControlRequest[]> {
  const rows = await sql.rows<ClaimedControlRequest & { id: string | number; sender_epoch: string | number }>(
    `UPDATE control_requests SET claimed_at = now()
      WHERE id IN (SELECT id FROM control_requests
                    WHERE target_epoch = $1 AND claimed_at IS NULL AND expires_at > now()
                    ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)
      RETURNING id, sender_epoch, logical_id, kind, body`,
    [me.epoch, limit],
  );
  return rows
    .map((r) => ({ ...r, id: Number(r.id), sender_epoch: Number(r.sender_epoch) }))
    .sort((a, b) => a.id - b.id);
}

export async function writeAnswer(sql: Sql, id: number, answer: string): Promise<void> {
  await sql.run('UPDATE control_requests SET answer = $2 WHERE id = $1', [id, answer]);
}

export async function readAnswer(sql: Sql, id: number): Promise<string | null> {
  const row = await sql.row<{ answer: string | null }>('SELECT answer FROM control_requests WHERE id = $1', [
    id,
  ]);
  return row?.answer ?? null;
}

/** One statement, so the answer and the lease are read at the same instant. */
export async function requestState(sql: Sql, id: number): Promise<ControlRequestState | null> {
  const row = await sql.row<ControlRequestState>(
    `SELECT r.answer, r.claimed_at IS NOT NULL AS claimed,
            EXISTS (SELECT 1 FROM cluster_leases l
                     WHERE l.kind = 'session' AND l.name = r.logical_id
                       AND l.owner_epoch = r.target_epoch AND l.expires_at > now()) AS target_holds_lease
       FROM control_requests r WHERE r.id = $1`,
    [id],
  );
  return row && { answer: row.answer, claimed: row.claimed, target_holds_lease: row.target_holds_lease };
}

export async function deleteRequest(sql: Sql, id: number): Promise<void> {
  await sql.run('DELETE FROM control_requests WHERE id = $1', [id]);
}

export async function pruneRequests(sql: Sql, graceS: number): Promise<number> {
  return sql.run('DELETE FROM control_requests WHERE expires_at < now() - make_interval(secs => $1)', [
    graceS,
  ]);
}
