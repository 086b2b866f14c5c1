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
import { createHash } from 'node:crypto';

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
