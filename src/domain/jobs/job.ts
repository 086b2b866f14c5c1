/**
 * A scheduled job (issue 28, docs/scheduling.md) as the domain reads it from its stored row: the
 * schedule, the target (an existing session, or a new session per run with its launch policy), the
 * text admitted at each run, where the result goes, and the policies of decide.ts.
 */
import { randomBytes } from 'node:crypto';
import { makePrincipal, type Capability, type Principal, type PrincipalProvider } from '../auth/principal.js';
import type { CreateSessionParams } from '../local/launch-params.js';
import type { JobRow } from '../ports/job-store.js';
import type { JobPolicy } from './decide.js';
import type { Schedule } from './schedule.js';

export type JobTarget =
  | { kind: 'session'; session_id: string }
  | { kind: 'new_session'; launch: Omit<CreateSessionParams, 'request_id' | 'api_key'> };

/**
 * Where a run's result goes: the target session only, or also the home channel of a chat platform
 * (`home_channels` in the config), through the delivery ledger (docs/scheduling.md, "Home channels").
 */
export type JobDelivery = 'session' | `home:${string}`;

/** The platform of a `home:<platform>` delivery; null for `session`. */
export function homePlatformOf(deliver: string): string | null {
  return deliver.startsWith('home:') ? deliver.slice('home:'.length) : null;
}

/** The ledger's turn id of a run's home-channel delivery: one obligation per run, whatever repeats it. */
export function homeDeliveryId(submissionId: string): string {
  return `home:${submissionId}`;
}

export interface Job {
  row: JobRow;
  schedule: Schedule;
  target: JobTarget;
  policy: JobPolicy;
}

export const POLICY_DEFAULTS: JobPolicy = {
  catch_up: 'last',
  freshness_s: 3600,
  overlap: 'skip',
  max_failures: 3,
};

export function newJobId(): string {
  return `job_${randomBytes(6).toString('hex')}`;
}

/** The submission id of a run: the job and the scheduled instant, so every retry names the same admission. */
export function runSubmissionId(jobId: string, instant: Date): string {
  return `job:${jobId}:${instant.toISOString()}`;
}

/** A manual run (jobs.run_now) is named by its caller's request id instead. */
export function manualSubmissionId(jobId: string, requestId: string): string {
  return `job:${jobId}:now:${requestId}`;
}

export function readJob(row: JobRow): Job {
  return {
    row,
    schedule: JSON.parse(row.schedule) as Schedule,
    target: JSON.parse(row.target) as JobTarget,
    policy: { ...POLICY_DEFAULTS, ...(JSON.parse(row.policy) as Partial<JobPolicy>) },
  };
}

interface StoredOwner {
  subject: string;
  provider: PrincipalProvider;
  profile: string;
  capabilities: Capability[];
  sessions?: string[];
}

/** The principal a job runs as: its creator's, as it was when the job was added. */
export function encodeOwner(principal: Principal): string {
  const owner: StoredOwner = {
    subject: principal.subject,
    provider: principal.provider,
    profile: principal.profile,
    capabilities: [...principal.capabilities],
    ...(principal.sessions ? { sessions: [...principal.sessions] } : {}),
  };
  return JSON.stringify(owner);
}

export function ownerPrincipal(row: JobRow): Principal {
  const o = JSON.parse(row.owner) as StoredOwner;
  return makePrincipal(o.subject, o.provider, o.profile, o.capabilities, o.sessions);
}

/** Whether `principal` may see and manage the job: its creator, or an operator of its profile. */
export function mayManage(principal: Principal, row: JobRow): boolean {
  if (principal.profile !== row.profile) return false;
  if (principal.capabilities.includes('session:operator')) return true;
  const o = JSON.parse(row.owner) as StoredOwner;
  return o.subject === principal.subject && o.provider === principal.provider;
}
