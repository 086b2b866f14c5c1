/** The admissions table's rows and their mapping to AdmissionRow, shared by both backends. */
import type { AdmissionState } from '../../domain/local/admission.js';
import type { AdmissionRow, StoredPrompt } from '../../domain/ports/local-store.js';

/** An admissions row as both backends read it (flags and times as SQLite stores them). */
export interface AdmissionDbRow {
  seq: number;
  admission_id: string;
  logical_id: string;
  submission_id: string;
  submitter_subject: string;
  submitter_provider: string;
  profile: string;
  digest: string;
  text: string;
  state: AdmissionState;
  epoch: number | null;
  generation: number | null;
  admitted_at: string;
  started_at: string | null;
  settled_at: string | null;
  detail: string | null;
  resumes: number;
  tool_started: string | null;
  prompt_json: string | null;
}

export function admissionFromRow(row: AdmissionDbRow): AdmissionRow {
  return {
    admission_id: row.admission_id,
    logical_id: row.logical_id,
    seq: row.seq,
    submission_id: row.submission_id,
    submitter: { subject: row.submitter_subject, provider: row.submitter_provider },
    profile: row.profile,
    digest: row.digest,
    text: row.text,
    state: row.state,
    epoch: row.epoch,
    generation: row.generation,
    admitted_at: row.admitted_at,
    started_at: row.started_at,
    settled_at: row.settled_at,
    detail: row.detail,
    resumes: row.resumes,
    tool_started: row.tool_started,
    prompt: row.prompt_json === null ? null : (JSON.parse(row.prompt_json) as StoredPrompt),
  };
}
