/**
 * The transcript transitions of a local session on PostgreSQL (LIN-2, STO-2): reset, rewind and
 * retry, as SQLite's local/transitions.ts, inside the store's transaction.
 */
import { submissionDigest } from '../../../domain/local/admission.js';
import { localSessionKey, receiptKey } from '../../../domain/local/receipt.js';
import type {
  ModelChangeResult,
  NewAdmission,
  NewModelChange,
  NewReset,
  NewRewind,
  ResetResult,
  RetryResult,
  RewindCommit,
} from '../../../domain/ports/local-store.js';
import {
  modelChangeDecision,
  receiptAfterReset,
  repeatedRewind,
  resetDecision,
  type StoredReceipt,
} from '../../../domain/local/transitions.js';
import type { Sql } from '../database.js';
import { resetInTransaction } from '../entry-actions.js';
import { findRewindByRequest } from '../ops/messages.js';
import { readRoute, readRoutedSessionId } from '../ops/routes.js';
import { rewindInTransaction } from '../transcript-actions.js';
import * as admissions from './admissions.js';
import { readReceipt, writeReceipt } from './creations.js';

export async function reset(sql: Sql, r: NewReset, fault: () => void): Promise<ResetResult> {
  const raw = await readReceipt(sql, receiptKey(r.logical_id));
  // The stored text, not a parsed copy: fields this code does not know are kept as they are.
  const stored = raw === null ? null : (JSON.parse(raw) as StoredReceipt);
  const entry = stored === null ? null : await readRoute(sql, localSessionKey(r.logical_id));
  const decision = resetDecision(stored, r, entry?.session_id ?? null);
  if (decision.kind !== 'go') return decision;
  // It goes ahead only when the route points at the expected transcript: the route exists.
  await resetInTransaction(sql, entry!, r.new_session_id, r.at);
  fault();
  const receipt = receiptAfterReset(decision.stored, r);
  await writeReceipt(sql, receiptKey(r.logical_id), JSON.stringify(receipt));
  return { kind: 'reset', receipt };
}

export async function changeModel(sql: Sql, change: NewModelChange): Promise<ModelChangeResult> {
  const raw = await readReceipt(sql, receiptKey(change.logical_id));
  // The stored text, not a parsed copy: fields this code does not know are kept as they are.
  const decision = modelChangeDecision(raw === null ? null : (JSON.parse(raw) as StoredReceipt), change);
  if (decision.kind !== 'go') return decision;
  await writeReceipt(sql, receiptKey(change.logical_id), JSON.stringify(decision.receipt));
  return { kind: 'changed', receipt: decision.receipt };
}

export async function rewind(sql: Sql, r: NewRewind): Promise<RewindCommit> {
  const done = await findRewindByRequest(sql, r.request_key);
  if (done !== null) return repeatedRewind(done);
  const current = await currentTranscript(sql, r.logical_id);
  return { ...(await rewindInTransaction(sql, current, r.turns, r.at, r.request_key)), duplicate: false };
}

export async function retry(
  sql: Sql,
  r: { admission: Omit<NewAdmission, 'text' | 'digest'>; request_key: string; at: string },
): Promise<RetryResult> {
  const probe = { ...r.admission, text: '', digest: '' };
  const existing = await admissions.findBySubmission(sql, probe);
  if (existing !== null) return { kind: 'duplicate', admission: existing };
  const current = await currentTranscript(sql, r.admission.logical_id);
  const undone = await rewindInTransaction(sql, current, 1, r.at, r.request_key);
  if (undone.target_text === null) return { kind: 'nothing' };
  const text = undone.target_text;
  const admission = await admissions.insertAdmission(
    sql,
    { ...probe, text, digest: submissionDigest(text) },
    r.at,
  );
  if (admission === null) throw new Error(`retry admission ${r.admission.submission_id} collided`);
  return { kind: 'retried', rewind: undone, admission };
}

/** The physical session a local session's route points at (its current transcript). */
export async function currentTranscript(sql: Sql, logicalId: string): Promise<string> {
  const sessionId = await readRoutedSessionId(sql, localSessionKey(logicalId));
  if (sessionId === null) throw new Error(`local session ${logicalId} has no route`);
  return sessionId;
}
