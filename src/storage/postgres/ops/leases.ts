/**
 * Generic leases on PostgreSQL (SCL-1): acquire, renew, release and take over a lease named by
 * kind + name. Who may take a lease is domain/cluster/lease.ts's decision; these statements read
 * the row with the server's clock and apply that decision as a compare-and-set on the token, so of
 * two instances taking at once exactly one wins. Expiry is always `now()` of the server.
 */
import {
  decideTake,
  type LeaseFacts,
  type LeaseHolder,
  type LeaseKind,
} from '../../../domain/cluster/lease.js';
import {
  BotLeaseLost,
  type BotFence,
  type HeldLease,
  type TakeResult,
} from '../../../domain/ports/cluster-store.js';
import type { Sql } from '../database.js';

const EXPIRES = `now() + make_interval(secs => $LEASE)`;

function expires(param: number): string {
  return EXPIRES.replace('$LEASE', `$${param}`);
}

export async function readLease(sql: Sql, kind: LeaseKind, name: string): Promise<LeaseFacts | null> {
  return sql.row<LeaseFacts>(
    `SELECT owner_instance, owner_epoch, token,
            (extract(epoch FROM expires_at) * 1000)::bigint AS expires_at,
            (extract(epoch FROM now()) * 1000)::bigint AS db_now
       FROM cluster_leases WHERE kind = $1 AND name = $2`,
    [kind, name],
  );
}

/**
 * Takes the lease for `me` when it is free, released or expired (a new token), renews it when it is
 * already `me`'s, and reports the live owner otherwise.
 */
export async function takeLease(
  sql: Sql,
  kind: LeaseKind,
  name: string,
  me: LeaseHolder,
  leaseS: number,
): Promise<TakeResult> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const decision = decideTake(await readLease(sql, kind, name), me);
    switch (decision.kind) {
      case 'held':
        return { kind: 'held', owner: decision.owner };
      case 'mine': {
        const renewed = await sql.row<{ token: number }>(
          `UPDATE cluster_leases SET expires_at = ${expires(5)}
            WHERE kind = $1 AND name = $2 AND owner_instance = $3 AND owner_epoch = $4 RETURNING token`,
          [kind, name, me.instance_id, me.epoch, leaseS],
        );
        if (renewed) return { kind: 'mine', token: renewed.token };
        continue;
      }
      case 'create': {
        const created = await sql.row<{ token: number }>(
          `INSERT INTO cluster_leases (kind, name, owner_instance, owner_epoch, token, expires_at)
           VALUES ($1, $2, $3, $4, 1, ${expires(5)})
           ON CONFLICT (kind, name) DO NOTHING RETURNING token`,
          [kind, name, me.instance_id, me.epoch, leaseS],
        );
        if (created) return { kind: 'taken', token: created.token, previous: null, fresh: true };
        continue;
      }
      case 'take': {
        // The compare-and-set: still the token we read, and still free or expired by the server's clock.
        const taken = await sql.row<{ token: number }>(
          `UPDATE cluster_leases
              SET owner_instance = $3, owner_epoch = $4, token = $6, expires_at = ${expires(5)}
            WHERE kind = $1 AND name = $2 AND token = $7
              AND (owner_epoch IS NULL OR expires_at <= now())
           RETURNING token`,
          [kind, name, me.instance_id, me.epoch, leaseS, decision.token, decision.from_token],
        );
        if (taken) return { kind: 'taken', token: taken.token, previous: decision.previous, fresh: false };
        continue;
      }
    }
  }
  // Three lost races in a row: someone else is taking it right now.
  const now = await readLease(sql, kind, name);
  const owner =
    now?.owner_instance && now.owner_epoch !== null
      ? { instance_id: now.owner_instance, epoch: now.owner_epoch }
      : { instance_id: 'unknown', epoch: 0 };
  return { kind: 'held', owner };
}

/**
 * The heartbeat, in ONE statement: the instance row's heartbeat and every lease `me` holds are
 * renewed to `now() + lease_s`. A lease still named `me`'s was never taken (a takeover changes its
 * owner), so one that passed its expiry unnoticed is renewed too. Returns the leases held now:
 * one missing from the instance's own list was taken over.
 */
export async function heartbeat(sql: Sql, me: LeaseHolder, leaseS: number): Promise<HeldLease[]> {
  return sql.rows<HeldLease>(
    `WITH beat AS (
       UPDATE cluster_instances SET heartbeat_at = now() WHERE epoch = $2 AND instance_id = $1 RETURNING 1
     ), renewed AS (
       UPDATE cluster_leases SET expires_at = ${expires(3)}
        WHERE owner_epoch = $2 AND owner_instance = $1 RETURNING kind, name, token
     )
     SELECT kind, name, token FROM renewed WHERE EXISTS (SELECT 1 FROM beat)`,
    [me.instance_id, me.epoch, leaseS],
  );
}

/** Gives a lease up at once (owner cleared, expired now; the token stays for the next owner to grow). */
export async function releaseLease(
  sql: Sql,
  kind: LeaseKind,
  name: string,
  me: LeaseHolder,
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE cluster_leases SET owner_instance = NULL, owner_epoch = NULL, expires_at = now()
      WHERE kind = $1 AND name = $2 AND owner_instance = $3 AND owner_epoch = $4`,
    [kind, name, me.instance_id, me.epoch],
  );
  return changed === 1;
}

/** Releases every lease of `kind` that `me` holds, except those named in `keep`; their names. */
export async function releaseAll(
  sql: Sql,
  kind: LeaseKind,
  me: LeaseHolder,
  keep: readonly string[] = [],
): Promise<string[]> {
  const rows = await sql.rows<{ name: string }>(
    `UPDATE cluster_leases SET owner_instance = NULL, owner_epoch = NULL, expires_at = now()
      WHERE kind = $1 AND owner_instance = $2 AND owner_epoch = $3 AND NOT (name = ANY($4::text[]))
     RETURNING name`,
    [kind, me.instance_id, me.epoch, keep],
  );
  return rows.map((r) => r.name);
}

/**
 * The fence of a write: true when `me` still holds the lease under `token` and it has not expired by
 * the server's clock at this moment. The row is locked (FOR SHARE) until the transaction ends, so a
 * takeover — an UPDATE of the row — waits for the fenced write to commit and then sees it.
 */
export async function holdsLease(
  sql: Sql,
  kind: LeaseKind,
  name: string,
  me: LeaseHolder,
  token: number,
): Promise<boolean> {
  const row = await sql.row(
    `SELECT 1 FROM cluster_leases
      WHERE kind = $1 AND name = $2 AND owner_instance = $3 AND owner_epoch = $4 AND token = $5
        AND expires_at > clock_timestamp()
      FOR SHARE`,
    [kind, name, me.instance_id, me.epoch, token],
  );
  return row !== null;
}

/**
 * The fence of a chat platform's write (SCL-1): every bot lease of the fence still held under its
 * token, each row locked FOR SHARE until the commit (holdsLease), or BotLeaseLost. No fence (one
 * instance, no cluster): nothing to check.
 */
export async function checkBotFence(sql: Sql, fence: BotFence | null): Promise<void> {
  if (fence === null) return;
  for (const name of fence.names) {
    const token = fence.token(name);
    if (token === null || !(await holdsLease(sql, 'bot', name, fence.holder, token))) {
      throw new BotLeaseLost(name);
    }
  }
}
