/** The admissions table's rows and their mapping to AdmissionRow, shared by both backends. */
import type { AdmissionState } from '../../domain/local/admission.js';
import type { AdmissionRow, StoredPrompt, TurnRecord } from '../../domain/ports/local-store.js';

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
  mode: string;
  applied_to: string | null;
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
    mode: row.mode === 'steer' ? 'steer' : 'prompt',
    applied_to: row.applied_to,
  };
}

/** The admissions columns joined with the turn's cost row (`c_*`, null while it has none). */
export const TURN_RECORD_SELECT = `SELECT a.*, c.provider AS c_provider, c.model AS c_model,
    c.input_tokens AS c_input, c.output_tokens AS c_output, c.cache_read_tokens AS c_cache_read,
    c.cost_usd AS c_cost, c.cost_status AS c_status
  FROM admissions a LEFT JOIN turn_costs c ON c.turn_id = a.admission_id`;

export type TurnRecordDbRow = AdmissionDbRow & {
  c_provider: string | null;
  c_model: string | null;
  c_input: number | null;
  c_output: number | null;
  c_cache_read: number | null;
  c_cost: number | null;
  c_status: string | null;
};

export function turnRecordFromRow(row: TurnRecordDbRow): TurnRecord {
  return {
    admission: admissionFromRow(row),
    cost:
      row.c_status === null
        ? null
        : {
            provider: row.c_provider ?? 'unknown',
            model: row.c_model ?? 'unknown',
            input_tokens: row.c_input ?? 0,
            output_tokens: row.c_output ?? 0,
            cache_read_tokens: row.c_cache_read ?? 0,
            cost_usd: row.c_cost ?? 0,
            cost_status: row.c_status,
          },
  };
}
