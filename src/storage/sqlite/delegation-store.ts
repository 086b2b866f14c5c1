/** Background delegations on SQLite (migration 028), on the session store's connection. */
import type Database from 'better-sqlite3';
import type {
  AddDelegationResult,
  DelegationRow,
  DelegationStore,
} from '../../domain/ports/delegation-store.js';
import { DELEGATION_COLUMNS, delegationValues, readDelegationRow } from '../rows/delegations.js';
import { CommitGroup } from './commit-group.js';
import { statement } from './statements.js';

const PLACEHOLDERS = DELEGATION_COLUMNS.split(', ')
  .map(() => '?')
  .join(', ');

/** Every write goes through the connection's commit group: it resolves once durable. */
export class SqliteDelegationStore implements DelegationStore {
  private readonly group: CommitGroup;

  constructor(private readonly db: Database.Database) {
    this.group = CommitGroup.of(db);
  }

  private rows(sql: string, ...args: unknown[]): DelegationRow[] {
    return (statement(this.db, sql).all(...args) as Record<string, unknown>[]).map(readDelegationRow);
  }

  addDelegation(row: DelegationRow): Promise<AddDelegationResult> {
    return this.group.run((): AddDelegationResult => {
      const [existing] = this.rows(
        `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE parent_id = ? AND request_id = ?`,
        row.parent_id,
        row.request_id,
      );
      if (existing) return { kind: 'existing', delegation: existing };
      statement(this.db, `INSERT INTO delegations (${DELEGATION_COLUMNS}) VALUES (${PLACEHOLDERS})`).run(
        ...delegationValues(row),
      );
      return { kind: 'added', delegation: row };
    });
  }

  getDelegation(delegationId: string): Promise<DelegationRow | null> {
    const [row] = this.rows(
      `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE delegation_id = ?`,
      delegationId,
    );
    return Promise.resolve(row ?? null);
  }

  listDelegations(profile: string, parentId: string | null): Promise<DelegationRow[]> {
    return Promise.resolve(
      parentId === null
        ? this.rows(
            `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE profile = ? ORDER BY created_at, delegation_id`,
            profile,
          )
        : this.rows(
            `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE profile = ? AND parent_id = ?
              ORDER BY created_at, delegation_id`,
            profile,
            parentId,
          ),
    );
  }

  openDelegations(profile: string): Promise<DelegationRow[]> {
    return Promise.resolve(
      this.rows(
        `SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE profile = ? AND state IN ('starting', 'running')
          ORDER BY created_at, delegation_id`,
        profile,
      ),
    );
  }

  delegationOfChild(childId: string): Promise<DelegationRow | null> {
    const [row] = this.rows(`SELECT ${DELEGATION_COLUMNS} FROM delegations WHERE child_id = ?`, childId);
    return Promise.resolve(row ?? null);
  }

  markRunning(delegationId: string, childId: string, admissionId: string): Promise<void> {
    return this.group.run(() => {
      statement(
        this.db,
        `UPDATE delegations SET state = 'running', child_id = ?, child_admission_id = ?
          WHERE delegation_id = ? AND state = 'starting'`,
      ).run(childId, admissionId, delegationId);
    });
  }

  markReported(
    delegationId: string,
    outcome: string,
    detail: string | null,
    resultAdmissionId: string | null,
    at: string,
  ): Promise<boolean> {
    return this.group.run(
      () =>
        statement(
          this.db,
          `UPDATE delegations SET state = 'reported', outcome = ?, detail = ?, result_admission_id = ?, ended_at = ?
            WHERE delegation_id = ? AND state IN ('starting', 'running')`,
        ).run(outcome, detail, resultAdmissionId, at, delegationId).changes === 1,
    );
  }

  markStopped(delegationId: string, detail: string, at: string): Promise<boolean> {
    return this.group.run(
      () =>
        statement(
          this.db,
          `UPDATE delegations SET state = 'stopped', outcome = 'stopped', detail = ?, ended_at = ?
            WHERE delegation_id = ? AND state IN ('starting', 'running')`,
        ).run(detail, at, delegationId).changes === 1,
    );
  }

  setKept(delegationId: string, kept: boolean): Promise<void> {
    return this.group.run(() => {
      statement(this.db, 'UPDATE delegations SET kept = ? WHERE delegation_id = ?').run(
        kept ? 1 : 0,
        delegationId,
      );
    });
  }
}
