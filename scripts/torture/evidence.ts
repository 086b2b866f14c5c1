/**
 * What the torture checks read from the store the daemons wrote, on either backend: the SQLite file
 * of one daemon's home, or the PostgreSQL schema a cluster of daemons shares. Read with a connection
 * of the harness's own (read-only on SQLite), never through the daemons.
 */
import Database from 'better-sqlite3';
import pg from 'pg';
import type { AdmissionFact } from './checks.js';

/** An admission a kill may have left started: `running`, or already `unknown` after a start. */
export interface Unsettled {
  admission_id: string;
  logical_id: string;
  generation: number;
}

export interface AdmissionStatus {
  state: string;
  generation: number;
  detail: string | null;
}

/** A scheduled job's run as the store holds it (scheduled_runs). */
export interface JobRunFact {
  job_id: string;
  submission_id: string;
  instant: string;
  kind: string;
  state: string;
  admission_id: string | null;
  outcome: string | null;
}

export interface StoreEvidence {
  unsettled(): Promise<Unsettled[]>;
  status(admissionId: string): Promise<AdmissionStatus | null>;
  admissions(): Promise<AdmissionFact[]>;
  /** How many sessions each creation request_id made (more than one is a duplicate). */
  sessionsPerRequest(): Promise<Map<string, number>>;
  /** Every run of every scheduled job. */
  jobRuns(): Promise<JobRunFact[]>;
  close(): Promise<void>;
}

const UNSETTLED = `SELECT admission_id, logical_id, generation FROM admissions WHERE state IN ('running', 'unknown')`;
const STATUS = 'SELECT state, generation, detail FROM admissions WHERE admission_id = ';
const ADMISSIONS = `SELECT admission_id, logical_id, submission_id, seq, state, started_at, settled_at, detail, resumes,
  text FROM admissions`;
const JOB_RUNS =
  'SELECT job_id, submission_id, instant, kind, state, admission_id, outcome FROM scheduled_runs';
const PER_REQUEST = `SELECT request_id, count(*) AS n FROM local_sessions WHERE request_id IS NOT NULL
  GROUP BY request_id`;

/** The SQLite file of a daemon's home, opened read-only for each read (the daemon may be writing). */
export function sqliteEvidence(file: string): StoreEvidence {
  const read = <T>(fn: (db: Database.Database) => T): Promise<T> => {
    const db = new Database(file, { readonly: true });
    try {
      return Promise.resolve(fn(db));
    } finally {
      db.close();
    }
  };
  return {
    unsettled: () => read((db) => db.prepare(UNSETTLED).all() as Unsettled[]),
    status: (id) => read((db) => (db.prepare(`${STATUS}?`).get(id) as AdmissionStatus | undefined) ?? null),
    admissions: () => read((db) => db.prepare(ADMISSIONS).all() as AdmissionFact[]),
    sessionsPerRequest: () =>
      read((db) => {
        const rows = db.prepare(PER_REQUEST).all() as { request_id: string; n: number }[];
        return new Map(rows.map((r) => [r.request_id, r.n]));
      }),
    jobRuns: () => read((db) => db.prepare(JOB_RUNS).all() as JobRunFact[]),
    close: () => Promise.resolve(),
  };
}

/** The PostgreSQL schema a cluster shares, through one connection of the harness's own. */
export async function postgresEvidence(url: string): Promise<StoreEvidence> {
  // BIGINT columns (seq, generation, counts) are read as numbers, as the store itself reads them.
  const types = {
    getTypeParser: (oid: number, format?: 'text' | 'binary') =>
      oid === 20 ? Number : (pg.types.getTypeParser(oid, format) as (value: string) => unknown),
  };
  const client = new pg.Client({ connectionString: url, types });
  await client.connect();
  const rows = async <T>(text: string, params: unknown[] = []): Promise<T[]> =>
    (await client.query(text, params)).rows as T[];
  return {
    unsettled: () => rows<Unsettled>(UNSETTLED),
    status: async (id) => (await rows<AdmissionStatus>(`${STATUS}$1`, [id]))[0] ?? null,
    admissions: () => rows<AdmissionFact>(ADMISSIONS),
    sessionsPerRequest: async () => {
      const found = await rows<{ request_id: string; n: number }>(PER_REQUEST);
      return new Map(found.map((r) => [r.request_id, r.n]));
    },
    jobRuns: () => rows<JobRunFact>(JOB_RUNS),
    close: () => client.end(),
  };
}
