/** Background delegations on PostgreSQL (migration 028), on the session store's connection. */
import type {
  AddDelegationResult,
  DelegationRow,
  DelegationStore,
} from '../../domain/ports/delegation-store.js';
import { DELEGATION_COLUMNS, delegationValues, readDelegationRow } from '../rows/delegations.js';
import type { PgDatabase } from './database.js';

const PLACEHOLDERS = DELEGATION_COLUMNS.split(', ')
  .map((_, i) => `$${i + 1}`)
  .join(', ');

export class PostgresDelegationStore implements DelegationStore {
  constructor(private readonly db: PgDatabase) {}

  private async rows(sql: string, args: unknown[]): Promise<DelegationRow[]> {
    const rows = await this.db.exclusive((c) => c.rows<Record<string, unknown>>(sql, args));
    return rows.map(readDelegationRow);
  }

  addDelegation(row: DelegationRow): Promise<AddDelegationResult> {
    return this.db.transaction(async (sql) => {
      const inserted = await sql.run(
        `INSERT INTO delegations (${DELEGATION_COLUMNS}) VALUES (${PLACEHOLDERS})
         ON CONFLICT (parent_id, request_id) DO NOTHING`,
        delegationValues(row),
      );
      if (inserted === 1) return { kind: 'added', delegation: row };
      const existing = await sql.row<Record<string, unknown>>(
        `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE parent_id = $1 AND request_id = $2`,
        [row.parent_id, row.request_id],
      );
      return { kind: 'existing', delegation: readDelegationRow(existing!) };
    });
  }

  async getDelegation(delegationId: string): Promise<DelegationRow | null> {
    const [row] = await this.rows(`SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE delegation_id = $1`, [
      delegationId,
    ]);
    return row ?? null;
  }

  listDelegations(profile: string, parentId: string | null): Promise<DelegationRow[]> {
    return parentId === null
      ? this.rows(
          `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE profile = $1 ORDER BY created_at, delegation_id`,
          [profile],
        )
      : this.rows(
          `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE profile = $1 AND parent_id = $2
            ORDER BY created_at, delegation_id`,
          [profile, parentId],
        );
  }

  openDelegations(profile: string): Promise<DelegationRow[]> {
    return this.rows(
      `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE profile = $1 AND state IN ('starting', 'running')
        ORDER BY created_at, delegation_id`,
      [profile],
    );
  }

  async delegationOfChild(childId: string): Promise<DelegationRow | null> {
    const [row] = await this.rows(`SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE child_id = $1`, [
      childId,
    ]);
    return row ?? null;
  }

  async markRunning(delegationId: string, childId: string, admissionId: string): Promise<void> {
    await this.db.exclusive((sql) =>
      sql.run(
        `UPDATE delegations SET state = 'running', child_id = $1, child_admission_id = $2
          WHERE delegation_id = $3 AND state = 'starting'`,
        [childId, admissionId, delegationId],
      ),
    );
  }

  async markReported(
    delegationId: string,
    outcome: string,
    detail: string | null,
    resultAdmissionId: string | null,
    at: string,
  ): Promise<boolean> {
    const changed = await this.db.exclusive((sql) =>
      sql.run(
        `UPDATE delegations SET state = 'reported', outcome = $1, detail = $2, result_admission_id = $3, ended_at = $4
          WHERE delegation_id = $5 AND state IN ('starting', 'running')`,
        [outcome, detail, resultAdmissionId, at, delegationId],
      ),
    );
    return changed === 1;
  }

  async markStopped(delegationId: string, detail: string, at: string): Promise<boolean> {
    const changed = await this.db.exclusive((sql) =>
      sql.run(
        `UPDATE delegations SET state = 'stopped', outcome = 'stopped', detail = $1, ended_at = $2
          WHERE delegation_id = $3 AND state IN ('starting', 'running')`,
        [detail, at, delegationId],
      ),
    );
    return changed === 1;
  }

  async setKept(delegationId: string, kept: boolean): Promise<void> {
    await this.db.exclusive((sql) =>
      sql.run('UPDATE delegations SET kept = $1 WHERE delegation_id = $2', [kept ? 1 : 0, delegationId]),
    );
  }
}
