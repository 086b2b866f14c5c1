/**
 * The session side of the cluster on PostgreSQL (SCL-1): which sessions have work and no live owner
 * (their lease missing, released or expired by the server's clock), which sessions with queued work
 * an instance owns, and the release of a session's lease once its queue is empty.
 */
import type { LeaseHolder } from '../../../domain/cluster/lease.js';
import type { Sql } from '../database.js';

/** Sessions with queued or running admissions whose lease no live instance holds, oldest work first. */
export async function ownerlessSessions(sql: Sql, limit: number): Promise<string[]> {
  const rows = await sql.rows<{ logical_id: string }>(
    `SELECT a.logical_id FROM admissions a
       LEFT JOIN cluster_leases l ON l.kind = 'session' AND l.name = a.logical_id
      WHERE a.state IN ('queued', 'running')
        AND (l.name IS NULL OR l.owner_epoch IS NULL OR l.expires_at <= now())
      GROUP BY a.logical_id ORDER BY min(a.seq) LIMIT $1`,
    [limit],
  );
  return rows.map((r) => r.logical_id);
}

/** Sessions `me` holds the lease of that have queued admissions (the rescan after lost wake-ups). */
export async function queuedUnder(sql: Sql, me: LeaseHolder, limit: number): Promise<string[]> {
  const rows = await sql.rows<{ logical_id: string }>(
    `SELECT a.logical_id FROM admissions a
       JOIN cluster_leases l ON l.kind = 'session' AND l.name = a.logical_id
      WHERE a.state = 'queued' AND l.owner_instance = $1 AND l.owner_epoch = $2
      GROUP BY a.logical_id ORDER BY min(a.seq) LIMIT $3`,
    [me.instance_id, me.epoch, limit],
  );
  return rows.map((r) => r.logical_id);
}

/**
 * Releases a session's lease only while it has no queued or running admission: an admission
 * committed on another instance just before is seen here and keeps the lease (that instance woke
 * this one); one committed just after finds the lease free and takes it itself.
 */
export async function releaseIdleSession(sql: Sql, logicalId: string, me: LeaseHolder): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE cluster_leases SET owner_instance = NULL, owner_epoch = NULL, expires_at = now()
      WHERE kind = 'session' AND name = $1 AND owner_instance = $2 AND owner_epoch = $3
        AND NOT EXISTS (SELECT 1 FROM admissions
                         WHERE logical_id = $1 AND state IN ('queued', 'running'))`,
    [logicalId, me.instance_id, me.epoch],
  );
  return changed === 1;
}
