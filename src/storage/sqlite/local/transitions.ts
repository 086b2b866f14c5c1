/**
 * The transcript transitions of a local session (LIN-2, STO-2): reset, rewind and retry, each one
 * transaction over the physical rows, the route, the receipt and (for retry) the new admission, and
 * each idempotent by the request that asked for it. Called inside the store's write transaction.
 */
import { submissionDigest } from '../../../domain/local/admission.js';
import { localSessionKey, receiptKey, type CreationReceipt } from '../../../domain/local/receipt.js';
import type {
  NewAdmission,
  NewReset,
  NewRewind,
  ResetResult,
  RetryResult,
  RewindCommit,
} from '../../local-store.js';
import type { SqliteDatabase } from '../database.js';
import { resetInTransaction } from '../entry-actions.js';
import { findRewindByRequest } from '../ops/messages.js';
import { readRoute, readRoutedSessionId } from '../ops/routes.js';
import { rewindInTransaction } from '../transcript-actions.js';
import * as admissions from './admissions.js';
import { readReceipt, writeReceipt } from './creations.js';

export function reset(db: SqliteDatabase, r: NewReset, fault: () => void): ResetResult {
  const raw = readReceipt(db, receiptKey(r.logical_id));
  if (raw === null) return { kind: 'moved' };
  // The stored text, not a parsed copy: fields this code does not know are kept as they are.
  const stored = JSON.parse(raw) as CreationReceipt & Record<string, unknown>;
  if (stored.lineage.some((step) => step.kind === 'reset' && step.request_id === r.request_id)) {
    return { kind: 'duplicate', receipt: stored };
  }
  const entry = readRoute(db, localSessionKey(r.logical_id));
  if (stored.current_session_id !== r.expected_session_id || entry?.session_id !== r.expected_session_id) {
    return { kind: 'moved' };
  }
  resetInTransaction(db, entry, r.new_session_id, r.at);
  fault();
  const receipt = {
    ...stored,
    current_session_id: r.new_session_id,
    lineage: [
      ...stored.lineage,
      {
        kind: 'reset' as const,
        from: r.expected_session_id,
        to: r.new_session_id,
        at: r.at,
        request_id: r.request_id,
      },
    ],
  };
  writeReceipt(db, receiptKey(r.logical_id), JSON.stringify(receipt));
  return { kind: 'reset', receipt };
}

export function rewind(db: SqliteDatabase, r: NewRewind): RewindCommit {
  const done = findRewindByRequest(db, r.request_key);
  if (done !== null) {
    const { rewound_count, turns_undone, target_text } = done;
    return { rewound_count, turns_undone, target_text, duplicate: true };
  }
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
