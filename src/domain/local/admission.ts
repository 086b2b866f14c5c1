/**
 * Admissions of local sessions (SPEC LOC-8, REC-2): their states, how a retry is recognised, and the
 * pure decision of what a session's queue does next.
 *
 *   queued ──claim──▶ running ──settle──▶ completed | failed | cancelled | interrupted
 *     │                  │
 *     └─cancel─▶ cancelled └─daemon died─▶ unknown ──resolve──▶ interrupted
 *
 * FIFO per session, one turn at a time. An `unknown` admission had started when the daemon died: it
 * is never replayed and blocks every admission behind it until an operator resolves it.
 */
import { createHash, randomUUID } from 'node:crypto';

export const ADMISSION_STATES = [
  'queued',
  'running',
  'unknown',
  'completed',
  'failed',
  'cancelled',
  'interrupted',
] as const;
export type AdmissionState = (typeof ADMISSION_STATES)[number];

export const SETTLED_STATES: readonly AdmissionState[] = ['completed', 'failed', 'cancelled', 'interrupted'];

export function isSettled(state: AdmissionState): boolean {
  return SETTLED_STATES.includes(state);
}

/** The payload digest a lost-ACK retry is compared by: same digest → same receipt. */
/**
 * A new admission id: a UUIDv7 (RFC 9562) — 48 bits of Unix milliseconds, then random bits taken
 * from a v4 UUID (Node's randomUUID draws them from a cached entropy pool). Ids of admissions that
 * arrive together share their prefix, so the unique index on admission_id grows at its end and a
 * group commit of hundreds of admissions dirties a few index pages instead of one per admission.
 */
export function newAdmissionId(now: number = Date.now()): string {
  const time = now.toString(16).padStart(12, '0');
  const random = randomUUID(); // xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx, V carrying the RFC variant
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15, 18)}-${random.slice(19)}`;
}

export function submissionDigest(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export interface QueuedItem {
  admission_id: string;
  state: AdmissionState;
}

export type NextStep =
  | { kind: 'idle' }
  | { kind: 'busy'; admission_id: string }
  | { kind: 'blocked'; admission_id: string }
  | { kind: 'claim'; admission_id: string };

/** What a session's queue does next, given its unsettled admissions in FIFO order. */
export function nextStep(fifo: readonly QueuedItem[]): NextStep {
  for (const item of fifo) {
    switch (item.state) {
      case 'running':
        return { kind: 'busy', admission_id: item.admission_id };
      case 'unknown':
        return { kind: 'blocked', admission_id: item.admission_id };
      case 'queued':
        return { kind: 'claim', admission_id: item.admission_id };
      case 'completed':
      case 'failed':
      case 'cancelled':
      case 'interrupted':
        continue;
    }
  }
  return { kind: 'idle' };
}
