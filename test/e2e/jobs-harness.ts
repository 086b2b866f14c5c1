/**
 * Helpers for the scheduled-jobs e2e tests: the test-only clock (GATEHOUSE_TEST_CLOCK, a file holding
 * the jobs' "now"), and waits on a job's state through jobs.list (there is no event across processes
 * for a job: the wait reads the job until it says what the case waits for, as waitForState does).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import type { Snapshot } from './recovery-harness.js';

export interface JobRun {
  instant: string;
  kind: string;
  state: string;
  outcome: string | null;
  session_id: string | null;
  admission_id: string | null;
  detail: string | null;
}

export interface Job {
  job_id: string;
  state: string;
  paused_reason: string | null;
  failures: number;
  next_run: string | null;
  last_run: JobRun | null;
}

export class TestClock {
  readonly file: string;

  constructor(dir: string, at: string) {
    this.file = join(dir, 'clock');
    this.set(at);
  }

  set(at: string): void {
    writeFileSync(this.file, `${at}\n`);
  }

  /** What a daemon needs to run its jobs on this clock. */
  env(): NodeJS.ProcessEnv {
    return { GATEHOUSE_TEST_CLOCK: this.file, NODE_ENV: 'test' };
  }
}

export async function jobOf(client: GatewayClient, jobId: string): Promise<Job> {
  const { jobs } = await client.call<{ jobs: Job[] }>('jobs.list', {});
  const job = jobs.find((j) => j.job_id === jobId);
  if (!job) throw new Error(`no job ${jobId} in jobs.list`);
  return job;
}

/** Reads the job until `done` holds (20 s at most). */
export async function jobUntil(
  client: GatewayClient,
  jobId: string,
  done: (job: Job) => boolean,
  timeoutMs = 20_000,
): Promise<Job> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const job = await jobOf(client, jobId);
    if (done(job)) return job;
    if (Date.now() > end) throw new Error(`job ${jobId} did not get there: ${JSON.stringify(job)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The last run of the job is the one scheduled at `instant`, and it ended. */
export const settledAt =
  (instant: string) =>
  (job: Job): boolean =>
    job.last_run?.instant === instant && job.last_run.state === 'settled';

/** The user messages of the session carrying `text`: one per run that reached the model. */
export async function runsIn(client: GatewayClient, sessionId: string, text: string): Promise<string[]> {
  const snap = await client.call<Snapshot>('session.resume', { session_id: sessionId });
  return snap.messages.filter((m) => m.role === 'user' && m.content === text).map((m) => m.admission_id!);
}
