/**
 * The decisions of a local session's transitions (LIN-2, STO-2) that do not depend on the backend:
 * whether a reset runs, the receipt it leaves, what a repeated rewind answers, and the row a new
 * admission is. SQLite's and PostgreSQL's local/transitions.ts and local/admissions.ts do the I/O
 * around them, each inside its store's transaction.
 */
import type { CreationReceipt } from './receipt.js';
import type { TranscriptMessage } from '../vocabulary.js';
import type {
  AdmissionRow,
  ModelChangeResult,
  NewModelChange,
  NewAdmission,
  NewReset,
  ResetResult,
  RewindCommit,
} from '../ports/local-store.js';

/** A receipt as stored: fields this code does not know are kept as they are. */
export type StoredReceipt = CreationReceipt & Record<string, unknown>;

/**
 * What a reset does with the stored receipt (null: none) and the session the route points at: it is
 * a repeat of one already done (idempotent by request id), moved (the caller's view is not the
 * current transcript), or it goes ahead.
 */
export function resetDecision(
  stored: StoredReceipt | null,
  r: NewReset,
  routedSessionId: string | null,
): Extract<ResetResult, { kind: 'duplicate' | 'moved' }> | { kind: 'go'; stored: StoredReceipt } {
  if (stored === null) return { kind: 'moved' };
  if (stored.lineage.some((step) => step.kind === 'reset' && step.request_id === r.request_id))
    return { kind: 'duplicate', receipt: stored };
  if (stored.current_session_id !== r.expected_session_id || routedSessionId !== r.expected_session_id)
    return { kind: 'moved' };
  return { kind: 'go', stored };
}

/** The receipt after a reset: the current transcript advanced and the reset step appended. */
export function receiptAfterReset(stored: StoredReceipt, r: NewReset): StoredReceipt {
  return {
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
}

/**
 * What a model change does with the stored receipt: nothing when there is none or when the session
 * already runs on that provider and model; else the receipt with the new provider and model (a
 * session-own endpoint and key given up) and the change appended to `model_changes`.
 */
export function modelChangeDecision(
  stored: StoredReceipt | null,
  change: NewModelChange,
): Exclude<ModelChangeResult, { kind: 'changed' }> | { kind: 'go'; receipt: StoredReceipt } {
  if (stored === null) return { kind: 'missing' };
  const policy = stored.policy;
  if (policy.provider === change.provider && policy.model === change.model && policy.base_url === null)
    return { kind: 'unchanged', receipt: stored };
  const samePlace = policy.base_url === null && policy.provider === change.provider;
  return {
    kind: 'go',
    receipt: {
      ...stored,
      policy: {
        ...policy,
        provider: change.provider,
        model: change.model,
        base_url: null,
        // A key given at creation was for that endpoint: it stays only on the same provider.
        requires_api_key: samePlace && policy.requires_api_key,
      },
      model_changes: [
        ...(stored.model_changes ?? []),
        {
          from: { provider: policy.provider ?? null, model: policy.model },
          to: { provider: change.provider, model: change.model },
          at: change.at,
        },
      ],
    },
  };
}

/** A rewind asked for again answers what the first one did. */
export function repeatedRewind(done: {
  rewound_count: number;
  turns_undone: number;
  target_text: string | null;
}): RewindCommit {
  const { rewound_count, turns_undone, target_text } = done;
  return { rewound_count, turns_undone, target_text, duplicate: true };
}

/** A new admission's row: exactly what was inserted, queued, with the sequence the store gave it. */
export function queuedAdmission(admission: NewAdmission, seq: number, at: string): AdmissionRow {
  return {
    admission_id: admission.admission_id,
    logical_id: admission.logical_id,
    seq,
    submission_id: admission.submission_id,
    submitter: { ...admission.submitter },
    profile: admission.profile,
    digest: admission.digest,
    text: admission.text,
    state: 'queued',
    epoch: null,
    generation: null,
    admitted_at: at,
    started_at: null,
    settled_at: null,
    detail: null,
    resumes: 0,
    tool_started: null,
    prompt: null,
    mode: admission.mode ?? 'prompt',
    applied_to: null,
  };
}

/** Issue 28: the user message a steer applied in a running turn is stored as (and the model sees). */
export function steerMessage(steer: AdmissionRow, turnId: string): TranscriptMessage {
  return { role: 'user', content: steer.text, admission_id: turnId, steer_id: steer.admission_id };
}
