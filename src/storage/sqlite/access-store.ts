/** Shares and the audit log on SQLite, on the session store's connection (migration 022). */
import type Database from 'better-sqlite3';
import type { SessionShare, ShareLevel } from '../../domain/auth/shares.js';
import type { AccessStore, AuditEntry, AuditQuery, AuditRow } from '../../domain/ports/access-store.js';
import { auditRow, shareRow } from '../rows/access.js';
import { answer } from './actions-common.js';
import { statement } from './statements.js';

type Db = Database.Database;

export class SqliteAccessStore implements AccessStore {
  constructor(private readonly db: Db) {}

  share(share: SessionShare): Promise<void> {
    return answer(() => {
      statement(
        this.db,
        `INSERT INTO session_shares (logical_id, member, level, granted_by, granted_at)
         VALUES (@logical_id, @member, @level, @granted_by, @granted_at)
         ON CONFLICT (logical_id, member) DO UPDATE SET
           level = excluded.level, granted_by = excluded.granted_by, granted_at = excluded.granted_at`,
      ).run(share);
    });
  }

  unshare(logicalId: string, member: string): Promise<boolean> {
    return answer(
      () =>
        statement(this.db, 'DELETE FROM session_shares WHERE logical_id = ? AND member = ?').run(
          logicalId,
          member,
        ).changes > 0,
    );
  }

  shareOf(logicalId: string, member: string): Promise<ShareLevel | null> {
    return answer(() => {
      const row = statement(
        this.db,
        'SELECT level FROM session_shares WHERE logical_id = ? AND member = ?',
      ).get(logicalId, member) as { level: ShareLevel } | undefined;
      return row?.level ?? null;
    });
  }

  sharesOf(member: string): Promise<ReadonlyMap<string, ShareLevel>> {
    return answer(() => {
      const rows = statement(this.db, 'SELECT logical_id, level FROM session_shares WHERE member = ?').all(
        member,
      ) as { logical_id: string; level: ShareLevel }[];
      return new Map(rows.map((r) => [r.logical_id, r.level]));
    });
  }

  sharesOn(logicalId: string): Promise<SessionShare[]> {
    return answer(() =>
      (
        statement(this.db, 'SELECT * FROM session_shares WHERE logical_id = ? ORDER BY member').all(
          logicalId,
        ) as Record<string, unknown>[]
      ).map(shareRow),
    );
  }

  appendAudit(entry: AuditEntry): Promise<void> {
    return answer(() => {
      statement(
        this.db,
        `INSERT INTO audit_log (at, principal, path, action, session_id, outcome, detail)
         VALUES (@at, @principal, @path, @action, @session_id, @outcome, @detail)`,
      ).run({ ...entry, detail: entry.detail === null ? null : JSON.stringify(entry.detail) });
    });
  }

  listAudit(query: AuditQuery): Promise<AuditRow[]> {
    return answer(() =>
      (
        statement(
          this.db,
          `SELECT * FROM audit_log
           WHERE (@before_id IS NULL OR id < @before_id)
             AND (@session_id IS NULL OR session_id = @session_id)
             AND (@principal IS NULL OR principal = @principal)
           ORDER BY id DESC LIMIT @limit`,
        ).all({
          before_id: query.before_id ?? null,
          session_id: query.session_id ?? null,
          principal: query.principal ?? null,
          limit: query.limit,
        }) as Record<string, unknown>[]
      ).map(auditRow),
    );
  }
}
