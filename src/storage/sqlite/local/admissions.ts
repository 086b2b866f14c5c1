/** Durable admissions (LOC-8, REC-2, REC-3): insert, claim, settle, and the crash sweep. */
import type {
  AdmissionRow,
  NewAdmission,
  SettleOutcome,
  StoredPrompt,
  TurnFence,
} from '../../../domain/ports/local-store.js';
import type { SqliteDatabase } from '../database.js';
import { queuedAdmission } from '../../../domain/local/transitions.js';
import { admissionFromRow, type AdmissionDbRow } from '../../rows/admissions.js';
import { statement } from '../statements.js';

/**
 * Inserts a queued admission; null when the same submitter already used this submission_id in the
 * session (read that one with findBySubmission). A session that does not exist fails the foreign key.
 */
export function insertAdmission(
  db: SqliteDatabase,
  admission: NewAdmission,
  at: string,
): AdmissionRow | null {
  const row = statement(
    db,
    `INSERT INTO admissions (admission_id, logical_id, submission_id, submitter_subject, submitter_provider,
       profile, digest, text, state, admitted_at, binding, mode)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)
     ON CONFLICT (logical_id, submitter_provider, submitter_subject, submission_id) DO NOTHING
     RETURNING seq`,
  ).get(
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
  ) as { seq: number } | undefined;
  if (!row) return null;
  // The new row is exactly what was inserted: built here rather than read back.
  return queuedAdmission(admission, row.seq, at);
}

/** True for the error SQLite raises when a row names a parent row that does not exist. */
export function isMissingParent(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

export function findBySubmission(db: SqliteDatabase, admission: NewAdmission): AdmissionRow | null {
  const row = statement(
    db,
    `SELECT * FROM admissions
     WHERE logical_id = ? AND submitter_provider = ? AND submitter_subject = ? AND submission_id = ?`,
  ).get(
    admission.logical_id,
    admission.submitter.provider,
    admission.submitter.subject,
    admission.submission_id,
  ) as AdmissionDbRow | undefined;
  return row ? admissionFromRow(row) : null;
}

export function readAdmission(db: SqliteDatabase, admissionId: string): AdmissionRow | null {
  const row = statement(db, 'SELECT * FROM admissions WHERE admission_id = ?').get(admissionId) as
    AdmissionDbRow | undefined;
  return row ? admissionFromRow(row) : null;
}

export function unsettled(db: SqliteDatabase, logicalId: string): AdmissionRow[] {
  return (
    statement(
      db,
      `SELECT * FROM admissions WHERE logical_id = ? AND state IN ('queued', 'running', 'unknown') ORDER BY seq`,
    ).all(logicalId) as AdmissionDbRow[]
  ).map(admissionFromRow);
}

export function sessionsWithQueued(db: SqliteDatabase): string[] {
  return (
    statement(
      db,
      `SELECT logical_id FROM admissions WHERE state = 'queued' GROUP BY logical_id ORDER BY min(seq)`,
    ).all() as { logical_id: string }[]
  ).map((r) => r.logical_id);
}

export function markRunning(
  db: SqliteDatabase,
  admissionId: string,
  epoch: number,
  generation: number,
  at: string,
): AdmissionRow {
  const row = statement(
    db,
    `UPDATE admissions SET state = 'running', epoch = ?, generation = ?, started_at = ?
     WHERE admission_id = ? AND state = 'queued' RETURNING *`,
  ).get(epoch, generation, at, admissionId) as AdmissionDbRow;
  return admissionFromRow(row);
}

/**
 * Settles a running admission only when epoch and generation still own it (REC-3). Returns the
 * admission's logical session id, or null when it was not settled.
 */
export function settleRunning(
  db: SqliteDatabase,
  admissionId: string,
  epoch: number,
  generation: number,
  outcome: SettleOutcome,
  detail: string | null,
  at: string,
): string | null {
  const row = statement(
    db,
    `UPDATE admissions SET state = ?, detail = ?, settled_at = ?
     WHERE admission_id = ? AND state = 'running' AND epoch = ? AND generation = ? RETURNING logical_id`,
  ).get(outcome, detail, at, admissionId, epoch, generation) as { logical_id: string } | undefined;
  return row?.logical_id ?? null;
}

export function cancelQueued(db: SqliteDatabase, admissionId: string, at: string): boolean {
  const info = statement(
    db,
    `UPDATE admissions SET state = 'cancelled', detail = 'cancelled before it started', settled_at = ?
     WHERE admission_id = ? AND state = 'queued'`,
  ).run(at, admissionId);
  return info.changes === 1;
}

export function markOrphansUnknown(
  db: SqliteDatabase,
  currentEpoch: number,
  logicalId: string | null = null,
): AdmissionRow[] {
  return (
    statement(
      db,
      `UPDATE admissions SET state = 'unknown'
       WHERE state = 'running' AND epoch <> ? AND (? IS NULL OR logical_id = ?) RETURNING *`,
    ).all(currentEpoch, logicalId, logicalId) as AdmissionDbRow[]
  ).map(admissionFromRow);
}

export function resolveUnknown(
  db: SqliteDatabase,
  admissionId: string,
  generation: number,
  detail: string,
  at: string,
): boolean {
  const info = statement(
    db,
    `UPDATE admissions SET state = 'interrupted', detail = ?, settled_at = ?
     WHERE admission_id = ? AND state = 'unknown' AND generation = ?`,
  ).run(detail, at, admissionId, generation);
  return info.changes === 1;
}

export function orphans(
  db: SqliteDatabase,
  currentEpoch: number,
  logicalId: string | null = null,
): AdmissionRow[] {
  return (
    statement(
      db,
      `SELECT * FROM admissions
       WHERE state = 'running' AND epoch <> ? AND (? IS NULL OR logical_id = ?) ORDER BY seq`,
    ).all(currentEpoch, logicalId, logicalId) as AdmissionDbRow[]
  ).map(admissionFromRow);
}

/** Takes a running orphan over for `epoch` under `generation`, one more resume. */
export function resumeOrphan(
  db: SqliteDatabase,
  admissionId: string,
  epoch: number,
  generation: number,
): AdmissionRow | null {
  const row = statement(
    db,
    `UPDATE admissions SET epoch = ?, generation = ?, resumes = resumes + 1
     WHERE admission_id = ? AND state = 'running' AND epoch <> ? RETURNING *`,
  ).get(epoch, generation, admissionId, epoch) as AdmissionDbRow | undefined;
  return row ? admissionFromRow(row) : null;
}

export function markUnknown(
  db: SqliteDatabase,
  admissionId: string,
  currentEpoch: number,
  detail: string,
): boolean {
  const info = statement(
    db,
    `UPDATE admissions SET state = 'unknown', detail = ?
     WHERE admission_id = ? AND state = 'running' AND epoch <> ?`,
  ).run(detail, admissionId, currentEpoch);
  return info.changes === 1;
}

/** Writes the step columns of a running turn while the fence owns it; false when stale. */
export function writeStep(
  db: SqliteDatabase,
  fence: TurnFence,
  step: { tool_started?: string | null; prompt?: StoredPrompt | null },
): boolean {
  const sets: string[] = [];
  const values: (string | null)[] = [];
  if (step.tool_started !== undefined) {
    sets.push('tool_started = ?');
    values.push(step.tool_started);
  }
  if (step.prompt !== undefined) {
    sets.push('prompt_json = ?');
    values.push(step.prompt === null ? null : JSON.stringify(step.prompt));
  }
  const info = statement(
    db,
    `UPDATE admissions SET ${sets.join(', ')}
     WHERE admission_id = ? AND state = 'running' AND epoch = ? AND generation = ?`,
  ).run(...values, fence.admission_id, fence.epoch, fence.generation);
  return info.changes === 1;
}

/** The logical session of a running admission the fence owns, or null. */
export function fencedLogicalId(db: SqliteDatabase, fence: TurnFence): string | null {
  const row = statement(
    db,
    `SELECT logical_id FROM admissions
     WHERE admission_id = ? AND state = 'running' AND epoch = ? AND generation = ?`,
  ).get(fence.admission_id, fence.epoch, fence.generation) as { logical_id: string } | undefined;
  return row?.logical_id ?? null;
}

/**
 * Issue 28: settles every queued steer of a session as applied in the turn `appliedTo`, oldest
 * first, and returns them (their text becomes user messages of that turn in the same transaction).
 */
export function takeQueuedSteers(
  db: SqliteDatabase,
  logicalId: string,
  appliedTo: string,
  at: string,
): AdmissionRow[] {
  return (
    statement(
      db,
      `UPDATE admissions SET state = 'completed', applied_to = ?, settled_at = ?,
         detail = 'applied as a steer in turn ' || ?
       WHERE logical_id = ? AND state = 'queued' AND mode = 'steer' RETURNING *`,
    ).all(appliedTo, at, appliedTo, logicalId) as AdmissionDbRow[]
  )
    .map(admissionFromRow)
    .sort((a, b) => a.seq - b.seq);
}
