/** Durable admissions on PostgreSQL (LOC-8, REC-2, REC-3, REC-7): as SQLite's local/admissions.ts. */
import type {
  AdmissionRow,
  NewAdmission,
  SettleOutcome,
  StoredPrompt,
  TurnFence,
} from '../../../domain/ports/local-store.js';
import { admissionFromRow, type AdmissionDbRow } from '../../rows/admissions.js';
import type { Sql } from '../database.js';
import { queuedAdmission } from '../../../domain/local/transitions.js';

/**
 * Inserts a queued admission; null when the session does not exist or the same submitter already
 * used this submission_id in it (findBySubmission tells which). A missing session inserts nothing
 * rather than failing the foreign key, which would abort the whole group transaction.
 */
export async function insertAdmission(
  sql: Sql,
  admission: NewAdmission,
  at: string,
): Promise<AdmissionRow | null> {
  const row = await sql.row<{ seq: number }>(
    `INSERT INTO admissions (admission_id, logical_id, submission_id, submitter_subject, submitter_provider,
       profile, digest, text, state, admitted_at, binding, mode)
     SELECT $1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9, $10, $11
      WHERE EXISTS (SELECT 1 FROM local_sessions WHERE logical_id = $2)
     ON CONFLICT (logical_id, submitter_provider, submitter_subject, submission_id) DO NOTHING
     RETURNING seq`,
    [
      admission.admission_id,
      admission.logical_id,
      admission.submission_id,
      admission.submitter.subject,
      admission.submitter.provider,
      admission.profile,
      admission.digest,
      admission.text,
      at,
      admission.binding,
      admission.mode ?? 'prompt',
    ],
  );
  if (!row) return null;
  return queuedAdmission(admission, row.seq, at);
}

const one = async (rows: Promise<AdmissionDbRow | null>) => {
  const row = await rows;
  return row === null ? null : admissionFromRow(row);
};
const all = async (rows: Promise<AdmissionDbRow[]>) => (await rows).map(admissionFromRow);

export function findBySubmission(sql: Sql, admission: NewAdmission): Promise<AdmissionRow | null> {
  return one(
    sql.row(
      `SELECT * FROM admissions
       WHERE logical_id = $1 AND submitter_provider = $2 AND submitter_subject = $3 AND submission_id = $4`,
      [
        admission.logical_id,
        admission.submitter.provider,
        admission.submitter.subject,
        admission.submission_id,
      ],
    ),
  );
}

export function readAdmission(sql: Sql, admissionId: string): Promise<AdmissionRow | null> {
  return one(sql.row('SELECT * FROM admissions WHERE admission_id = $1', [admissionId]));
}

export function unsettled(sql: Sql, logicalId: string): Promise<AdmissionRow[]> {
  return all(
    sql.rows(
      `SELECT * FROM admissions WHERE logical_id = $1 AND state IN ('queued', 'running', 'unknown') ORDER BY seq`,
      [logicalId],
    ),
  );
}

export async function sessionsWithQueued(sql: Sql): Promise<string[]> {
  const rows = await sql.rows<{ logical_id: string }>(
    `SELECT logical_id FROM admissions WHERE state = 'queued' GROUP BY logical_id ORDER BY min(seq)`,
  );
  return rows.map((r) => r.logical_id);
}

export async function markRunning(
  sql: Sql,
  admissionId: string,
  epoch: number,
  generation: number,
  at: string,
): Promise<AdmissionRow> {
  const row = await one(
    sql.row(
      `UPDATE admissions SET state = 'running', epoch = $1, generation = $2, started_at = $3
       WHERE admission_id = $4 AND state = 'queued' RETURNING *`,
      [epoch, generation, at, admissionId],
    ),
  );
  if (row === null) throw new Error(`admission ${admissionId} is no longer queued`);
  return row;
}

/** Settles a running admission only while epoch and generation own it; its logical id, or null. */
export async function settleRunning(
  sql: Sql,
  admissionId: string,
  epoch: number,
  generation: number,
  outcome: SettleOutcome,
  detail: string | null,
  at: string,
): Promise<string | null> {
  const row = await sql.row<{ logical_id: string }>(
    `UPDATE admissions SET state = $1, detail = $2, settled_at = $3
     WHERE admission_id = $4 AND state = 'running' AND epoch = $5 AND generation = $6 RETURNING logical_id`,
    [outcome, detail, at, admissionId, epoch, generation],
  );
  return row?.logical_id ?? null;
}

export async function cancelQueued(sql: Sql, admissionId: string, at: string): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE admissions SET state = 'cancelled', detail = 'cancelled before it started', settled_at = $1
     WHERE admission_id = $2 AND state = 'queued'`,
    [at, admissionId],
  );
  return changed === 1;
}

export function markOrphansUnknown(
  sql: Sql,
  currentEpoch: number,
  logicalId: string | null,
): Promise<AdmissionRow[]> {
  return all(
    sql.rows(
      `UPDATE admissions SET state = 'unknown'
       WHERE state = 'running' AND epoch <> $1 AND ($2::text IS NULL OR logical_id = $2) RETURNING *`,
      [currentEpoch, logicalId],
    ),
  );
}

export async function resolveUnknown(
  sql: Sql,
  admissionId: string,
  generation: number,
  detail: string,
  at: string,
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE admissions SET state = 'interrupted', detail = $1, settled_at = $2
     WHERE admission_id = $3 AND state = 'unknown' AND generation = $4`,
    [detail, at, admissionId, generation],
  );
  return changed === 1;
}

export function orphans(sql: Sql, currentEpoch: number, logicalId: string | null): Promise<AdmissionRow[]> {
  return all(
    sql.rows(
      `SELECT * FROM admissions
       WHERE state = 'running' AND epoch <> $1 AND ($2::text IS NULL OR logical_id = $2) ORDER BY seq`,
      [currentEpoch, logicalId],
    ),
  );
}

/** Takes a running orphan over for `epoch` under `generation`, one more resume. */
export function resumeOrphan(
  sql: Sql,
  admissionId: string,
  epoch: number,
  generation: number,
): Promise<AdmissionRow | null> {
  return one(
    sql.row(
      `UPDATE admissions SET epoch = $1, generation = $2, resumes = resumes + 1
       WHERE admission_id = $3 AND state = 'running' AND epoch <> $1 RETURNING *`,
      [epoch, generation, admissionId],
    ),
  );
}

export async function markUnknown(
  sql: Sql,
  admissionId: string,
  currentEpoch: number,
  detail: string,
): Promise<boolean> {
  const changed = await sql.run(
    `UPDATE admissions SET state = 'unknown', detail = $1
     WHERE admission_id = $2 AND state = 'running' AND epoch <> $3`,
    [detail, admissionId, currentEpoch],
  );
  return changed === 1;
}

/** Writes the step columns of a running turn while the fence owns it; false when stale. */
export async function writeStep(
  sql: Sql,
  fence: TurnFence,
  step: { tool_started?: string | null; prompt?: StoredPrompt | null },
): Promise<boolean> {
  const sets: string[] = [];
  const values: (string | number | null)[] = [];
  if (step.tool_started !== undefined) {
    values.push(step.tool_started);
    sets.push(`tool_started = $${values.length}`);
  }
  if (step.prompt !== undefined) {
    values.push(step.prompt === null ? null : JSON.stringify(step.prompt));
    sets.push(`prompt_json = $${values.length}`);
  }
  const n = values.length;
  const changed = await sql.run(
    `UPDATE admissions SET ${sets.join(', ')}
     WHERE admission_id = $${n + 1} AND state = 'running' AND epoch = $${n + 2} AND generation = $${n + 3}`,
    [...values, fence.admission_id, fence.epoch, fence.generation],
  );
  return changed === 1;
}

/** The logical session of a running admission the fence owns, or null. */
export async function fencedLogicalId(sql: Sql, fence: TurnFence): Promise<string | null> {
  const row = await sql.row<{ logical_id: string }>(
    `SELECT logical_id FROM admissions
     WHERE admission_id = $1 AND state = 'running' AND epoch = $2 AND generation = $3`,
    [fence.admission_id, fence.epoch, fence.generation],
  );
  return row?.logical_id ?? null;
}

/** The session of an admission, or null when there is none. */
export async function logicalIdOf(sql: Sql, admissionId: string): Promise<string | null> {
  const row = await sql.row<{ logical_id: string }>(
    'SELECT logical_id FROM admissions WHERE admission_id = $1',
    [admissionId],
  );
  return row?.logical_id ?? null;
}

/** Issue 28: as SQLite's takeQueuedSteers: the session's queued steers, settled as applied in `appliedTo`. */
export async function takeQueuedSteers(
  sql: Sql,
  logicalId: string,
  appliedTo: string,
  at: string,
): Promise<AdmissionRow[]> {
  return (
    await all(
      sql.rows(
        `UPDATE admissions SET state = 'completed', applied_to = $1, settled_at = $2,
           detail = 'applied as a steer in turn ' || $1
         WHERE logical_id = $3 AND state = 'queued' AND mode = 'steer' RETURNING *`,
        [appliedTo, at, logicalId],
      ),
    )
  ).sort((a, b) => a.seq - b.seq);
}
