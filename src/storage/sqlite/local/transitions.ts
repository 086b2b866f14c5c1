/**
 * The transcript transitions of a local session (LIN-2, STO-2): reset, rewind and retry, each one
 * transaction over the physical rows, the route, the receipt and (for retry) the new admission, and
 * each idempotent by the request that asked for it. Called inside the store's write transaction.
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
import type { SqliteDatabase } from '../database.js';
import { resetInTransaction } from '../entry-actions.js';
import { findRewindByRequest } from '../ops/messages.js';
import { readRoute, readRoutedSessionId } from '../ops/routes.js';
import { rewindInTransaction } from '../transcript-actions.js';
import * as admissions from './admissions.js';
import { readReceipt, writeReceipt } from './creations.js';

export function reset(db: SqliteDatabase, r: NewReset, fault: () => void): ResetResult {
  const raw = readReceipt(db, receiptKey(r.logical_id));
  // The stored text, not a parsed copy: fields this code does not know are kept as they are.
  const stored = raw === null ? null : (JSON.parse(raw) as StoredReceipt);
  const entry = stored === null ? null : readRoute(db, localSessionKey(r.logical_id));
  const decision = resetDecision(stored, r, entry?.session_id ?? null);
  if (decision.kind !== 'go') return decision;
  // It goes ahead only when the route points at the expected transcript: the route exists.
  resetInTransaction(db, entry!, r.new_session_id, r.at);
  fault();
  const receipt = receiptAfterReset(decision.stored, r);
  writeReceipt(db, receiptKey(r.logical_id), JSON.stringify(receipt));
  return { kind: 'reset', receipt };
}

export function changeModel(db: SqliteDatabase, change: NewModelChange): ModelChangeResult {
  const raw = readReceipt(db, receiptKey(change.logical_id));
  // The stored text, not a parsed copy: fields this code does not know are kept as they are.
  const decision = modelChangeDecision(raw === null ? null : (JSON.parse(raw) as StoredReceipt), change);
  if (decision.kind !== 'go') return decision;
  writeReceipt(db, receiptKey(change.logical_id), JSON.stringify(decision.receipt));
  return { kind: 'changed', receipt: decision.receipt };
}

export function rewind(db: SqliteDatabase, r: NewRewind): RewindCommit {
  const done = findRewindByRequest(db, r.request_key);
  if (done !== null) return repeatedRewind(done);
  return {
    ...rewindInTransaction(db, current(db, r.logical_id), r.turns, r.at, r.request_key),
    duplicate: false,
  };
}

export function retry(
  db: SqliteDatabase,
  r: { admission: Omit<NewAdmission, 'text' | 'digest'>; request_key: string; at: string },
): RetryResult {
  const probe = { ...r.admission, text: '', digest: '' };
  const existing = admissions.findBySubmission(db, probe);
  if (existing !== null) return { kind: 'duplicate', admission: existing };
  const undone = rewindInTransaction(db, current(db, r.admission.logical_id), 1, r.at, r.request_key);
  if (undone.target_text === null) return { kind: 'nothing' };
  const text = undone.target_text;
  const admission = admissions.insertAdmission(db, { ...probe, text, digest: submissionDigest(text) }, r.at);
  if (admission === null) throw new Error(`retry admission ${r.admission.submission_id} collided`);
  return { kind: 'retried', rewind: undone, admission };
}

function current(db: SqliteDatabase, logicalId: string): string {
  const sessionId = readRoutedSessionId(db, localSessionKey(logicalId));
  if (sessionId === null) throw new Error(`local session ${logicalId} has no route`);
  return sessionId;
}
