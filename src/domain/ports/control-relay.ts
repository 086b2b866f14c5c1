/**
 * The storage contract of the control relay (SCL-1, issue 14): requests one instance of a cluster
 * writes for the instance holding a session's lease, and their answers. Only PostgreSQL carries it
 * (a cluster needs a shared server); domain/cluster/relay.ts drives it.
 */
import type { LeaseHolder } from '../cluster/lease.js';

/** A request as the lease owner claims it. */
export interface ClaimedControlRequest {
  id: number;
  sender_epoch: number;
  logical_id: string;
  kind: string;
  /** JSON written by the sender (the caller's principal and the call's params). */
  body: string;
}

export interface NewControlRequest {
  target: LeaseHolder;
  logical_id: string;
  kind: string;
  body: string;
  /** Past this many ms from now (the server's clock) the owner no longer executes it. */
  ttlMs: number;
}

export interface ControlRelayStore {
  readonly holder: LeaseHolder;
  /** The live holder of a session's lease (unexpired), or null. */
  sessionOwner(logicalId: string): Promise<LeaseHolder | null>;
  /** Writes a request and wakes its target, in one commit; the request's id. */
  send(request: NewControlRequest): Promise<number>;
  /** Claims (once) the unexpired requests addressed to this instance, oldest first. */
  claim(limit: number): Promise<ClaimedControlRequest[]>;
  /** Writes the answer of a claimed request and wakes its sender, in one commit. */
  answer(request: ClaimedControlRequest, answer: string): Promise<void>;
  /** The answer of a request this instance sent, or null while there is none. */
  readAnswer(id: number): Promise<string | null>;
  /**
   * A request this instance sent, read at once: its answer, whether its target claimed (started)
   * it, and whether the target still holds the session's lease (unexpired). Null when it is gone.
   */
  requestState(id: number): Promise<ControlRequestState | null>;
  /** Deletes a request whose answer was read, or that was given up. */
  forget(id: number): Promise<void>;
  /** Deletes requests expired more than `graceS` seconds ago; how many. */
  prune(graceS: number): Promise<number>;
  /** Listens for wake-ups meant for this instance; `resubscribed`: notes may have been lost. */
  subscribe(handler: (note: ControlNote) => void, resubscribed: () => void): () => void;
}

/** See ControlRelayStore.requestState. */
export interface ControlRequestState {
  answer: string | null;
  claimed: boolean;
  target_holds_lease: boolean;
}

/** A wake-up on the relay's channel: a request for, or an answer to, the instance of `epoch`. */
export interface ControlNote {
  kind: 'request' | 'answer';
  epoch: number;
  id: number;
}

export const CONTROL_CHANNEL = 'gatehouse_control';

export function formatControlNote(note: ControlNote): string {
  return `${note.kind}:${note.epoch}:${note.id}`;
}

/** Null for anything malformed (dropped: the timeouts and re-reads are the safety net). */
export function parseControlNote(payload: string): ControlNote | null {
  const [kind, epoch, id, extra] = payload.split(':');
  if (extra !== undefined || (kind !== 'request' && kind !== 'answer')) return null;
  const e = Number(epoch);
  const i = Number(id);
  if (!Number.isSafeInteger(e) || !Number.isSafeInteger(i)) return null;
  return { kind, epoch: e, id: i };
}
