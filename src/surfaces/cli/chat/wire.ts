/** What the chat reads from the gateway's replies and notifications, as far as it uses them. */
import type { PendingAdmissionView } from './cursor.js';
import type { ChatEvent, StoredMessageView } from './render.js';

export interface Snapshot {
  session_id: string;
  messages: StoredMessageView[];
  pending_admissions: PendingAdmissionView[];
  prompts: ChatEvent[];
  running: { admission_id: string; generation: number } | null;
  epoch: number;
  last_seq: number;
  info: {
    cwd: string | null;
    model: string | null;
    instruction_files?: { rules: string[]; personal: string | null } | null;
  };
}

export interface Sequenced {
  session_id: string;
  epoch: number;
  seq: number;
  event: ChatEvent;
}

export interface Submission {
  submissionId: string;
  text: string;
  admissionId: string | null;
  acknowledged: boolean;
}

/**
 * One RPC on the chat's current link. It rejects with ConnectionClosedError when there is no link,
 * so every caller handles "not connected" and "dropped mid-call" the same way.
 */
export type Call = <T = Record<string, unknown>>(method: string, params: unknown) => Promise<T>;
