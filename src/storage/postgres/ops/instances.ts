/** The instances of a cluster on PostgreSQL (SCL-1): one row per instance and authority epoch. */
import type { LeaseHolder } from '../../../domain/cluster/lease.js';
import type { BotLeaseView, InstanceView } from '../../../domain/ports/cluster-store.js';
import type { Sql } from '../database.js';

export async function registerInstance(sql: Sql, me: LeaseHolder, name: string | null): Promise<void> {
  await sql.run(
    `INSERT INTO cluster_instances (instance_id, epoch, name) VALUES ($1, $2, $3)
     ON CONFLICT (epoch) DO UPDATE SET heartbeat_at = now()`,
    [me.instance_id, me.epoch, name],
  );
}

export async function setInstanceUrl(sql: Sql, me: LeaseHolder, url: string): Promise<void> {
  await sql.run(`UPDATE cluster_instances SET url = $2 WHERE epoch = $1`, [me.epoch, url]);
}

export async function markDraining(sql: Sql, me: LeaseHolder): Promise<void> {
  await sql.run(`UPDATE cluster_instances SET draining = true WHERE epoch = $1`, [me.epoch]);
}

export async function markStopped(sql: Sql, me: LeaseHolder): Promise<void> {
  await sql.run(`UPDATE cluster_instances SET draining = true, stopped_at = now() WHERE epoch = $1`, [
    me.epoch,
  ]);
}

/**
 * Instances not stopped whose heartbeat is younger than `forgetAfterS` (a killed one stays listed,
 * its heartbeat ageing, until then), with the leases each holds now.
 */
export async function listInstances(sql: Sql, forgetAfterS: number): Promise<InstanceView[]> {
  const rows = await sql.rows<
    Omit<InstanceView, 'leases' | 'stopped'> & {
      stopped_at: string | null;
      kinds: Record<string, number> | null;
    }
  >(
    `SELECT i.instance_id, i.epoch, i.name, i.url, i.started_at::text AS started_at, i.draining,
            i.stopped_at::text AS stopped_at,
            (extract(epoch FROM now() - i.heartbeat_at) * 1000)::bigint AS heartbeat_age_ms,
            (SELECT jsonb_object_agg(kind, n) FROM (
               SELECT kind, count(*)::int AS n FROM cluster_leases l
                WHERE l.owner_epoch = i.epoch AND l.expires_at > now() GROUP BY kind) k) AS kinds
       FROM cluster_instances i
      WHERE i.stopped_at IS NULL AND i.heartbeat_at > now() - make_interval(secs => $1)
      ORDER BY i.epoch`,
    [forgetAfterS],
  );
  return rows.map(({ kinds, stopped_at, ...row }) => ({
    ...row,
    stopped: stopped_at !== null,
    leases: kinds ?? {},
  }));
}

/** Every bot lease (docs/cluster.md, "Chat platforms"): who holds it now, null when free or expired. */
export async function listBotLeases(sql: Sql): Promise<BotLeaseView[]> {
  return sql.rows<BotLeaseView>(
    `SELECT l.name, l.token,
            CASE WHEN l.expires_at > now() THEN l.owner_epoch END AS owner_epoch,
            CASE WHEN l.expires_at > now() THEN i.name END AS owner_name
       FROM cluster_leases l LEFT JOIN cluster_instances i ON i.epoch = l.owner_epoch
      WHERE l.kind = 'bot'
      ORDER BY l.name`,
  );
}
