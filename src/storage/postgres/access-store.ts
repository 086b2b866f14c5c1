/** Shares and the audit log on PostgreSQL, on the session store's connection (as SQLite's). */
import type { SessionShare, ShareLevel } from '../../domain/auth/shares.js';
import type { AccessStore, AuditEntry, AuditQuery, AuditRow } from '../../domain/ports/access-store.js';
import { auditRow, shareRow } from '../rows/access.js';
import type { PgDatabase } from './database.js';
import { insertAudit } from './ops/audit.js';

export class PostgresAccessStore implements AccessStore {
  constructor(private readonly db: PgDatabase) {}

  share(share: SessionShare, audit: AuditEntry | null = null): Promise<void> {
    return this.db.transaction(async (sql) => {
      await sql.run(
        `INSERT INTO session_shares (logical_id, member, level, granted_by, granted_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (logical_id, member) DO UPDATE SET
           level = excluded.level, granted_by = excluded.granted_by, granted_at = excluded.granted_at`,
        [share.logical_id, share.member, share.level, share.granted_by, share.granted_at],
      );
      if (audit) await insertAudit(sql, audit);
    });
  }

  unshare(logicalId: string, member: string, audit: AuditEntry | null = null): Promise<boolean> {
    return this.db.transaction(async (sql) => {
      const revoked =
        (await sql.run('DELETE FROM session_shares WHERE logical_id = $1 AND member = $2', [
          logicalId,
          member,
        ])) > 0;
      if (audit) await insertAudit(sql, audit);
      return revoked;
    });
  }

  shareOf(logicalId: string, member: string): Promise<ShareLevel | null> {
    return this.db.exclusive(async (sql) => {
      const row = await sql.row<{ level: ShareLevel }>(
        'SELECT level FROM session_shares WHERE logical_id = $1 AND member = $2',
        [logicalId, member],
      );
      return row?.level ?? null;
    });
  }

  sharesOf(member: string): Promise<ReadonlyMap<string, ShareLevel>> {
    return this.db.exclusive(async (sql) => {
      const rows = await sql.rows<{ logical_id: string; level: ShareLevel }>(
        'SELECT logical_id, level FROM session_shares WHERE member = $1',
        [member],
      );
      return new Map(rows.map((r) => [r.logical_id, r.level]));
    });
  }

  sharesOn(logicalId: string): Promise<SessionShare[]> {
    return this.db.exclusive(async (sql) =>
      (
        await sql.rows<Record<string, unknown>>(
          'SELECT * FROM session_shares WHERE logical_id = $1 ORDER BY member',
          [logicalId],
        )
      ).map(shareRow),
    );
  }

  appendAudit(entry: AuditEntry): Promise<void> {
    return this.db.exclusive((sql) => insertAudit(sql, entry));
  }

  listAudit(query: AuditQuery): Promise<AuditRow[]> {
    return this.db.exclusive(async (sql) =>
      (
        await sql.rows<Record<string, unknown>>(
          `SELECT * FROM audit_log
           WHERE ($1::bigint IS NULL OR id < $1)
             AND ($2::text IS NULL OR session_id = $2)
             AND ($3::text IS NULL OR principal = $3)
           ORDER BY id DESC LIMIT $4`,
          [query.before_id ?? null, query.session_id ?? null, query.principal ?? null, query.limit],
        )
      ).map(auditRow),
    );
  }
}
