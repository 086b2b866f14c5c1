/**
 * Scheduled jobs in the cluster torture (issue 28): per-minute jobs, each into a session of its own,
 * on the daemons' test clock (GATEHOUSE_TEST_CLOCK), which the harness moves one minute forward at
 * every iteration while instances are SIGKILLed (at random, and at `job.decided`). After the final
 * drain every scheduled instant must have been fired exactly once:
 *
 * - lost: an instant up to the clock's last minute with no run, a run not settled, or a run whose
 *   admission is missing or ended other than completed (an admission recovery left `unknown` is
 *   resolved and counted apart: it was admitted once and never re-run);
 * - duplicated: two runs of one instant, a turn started more often than its resumes allow, or the
 *   run's message twice in its session's transcript.
 *
 * The jobs use `catch_up: all` and `overlap: queue`, so an instant that fell due while the jobs'
 * instance was down, or while the previous run went on, is still fired (late, once).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordedRequest } from '../../src/runtime/demo/server.js';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { turnStarts, type AdmissionFact, type SnapshotMessage } from './checks.js';
import type { JobRunFact } from './evidence.js';

/** The clock starts half a minute past this instant; iteration n moves it to 5 s past minute n. */
const BASE = Date.parse('2026-03-02T08:00:00.000Z');
const MINUTE = 60_000;

export interface JobTally {
  jobs: number;
  /** Scheduled instants due by the end of the run, over every job. */
  instants: number;
  /** Instants whose run completed. */
  fired: number;
  /** Instants whose run recovery left unknown (resolved by the harness, never re-run). */
  unknown: number;
  lost: number;
  duplicated: number;
}

interface TortureJob {
  job_id: string;
  session_id: string;
}

export class JobWorkload {
  readonly clockFile: string;
  readonly jobs: TortureJob[] = [];
  /** Final transcripts of the jobs' sessions (read by `settle`). */
  readonly transcripts = new Map<string, SnapshotMessage[]>();
  private minute = 0;

  constructor(
    root: string,
    /** How many per-minute jobs (0: none, and the daemons run on the system clock). */
    readonly count: number,
  ) {
    this.clockFile = join(root, 'clock');
    this.writeClock();
  }

  /** What every daemon needs to run the jobs on the harness's clock. */
  env(): Record<string, string> {
    return this.count > 0 ? { GATEHOUSE_TEST_CLOCK: this.clockFile, NODE_ENV: 'test' } : {};
  }

  /** Adds the jobs (before the first kill), each into a session of its own in `cwd`. */
  async setUp(g: GatewayClient, cwd: string): Promise<void> {
    for (let k = 0; k < this.count; k++) {
      const { session_id } = await g.call<{ session_id: string }>('session.create', {
        request_id: `torture-job-session-${k}`,
        cwd,
      });
      const { job } = await g.call<{ job: { job_id: string } }>('jobs.add', {
        request_id: `torture-job-${k}`,
        cron: '* * * * *',
        session_id,
        text: `scheduled tick ${k}`,
        catch_up: 'all',
        overlap: 'queue',
        freshness_s: 31 * 86_400,
        max_failures: 1000,
      });
      this.jobs.push({ job_id: job.job_id, session_id });
    }
  }

  /** One more minute: the jobs' next instant falls due. */
  advance(): void {
    if (this.count === 0) return;
    this.minute++;
    this.writeClock();
  }

  /** The instants due by now, oldest first. */
  instants(): string[] {
    return Array.from({ length: this.minute }, (_, i) => new Date(BASE + (i + 1) * MINUTE).toISOString());
  }

  /**
   * Waits until every due instant of every job has a settled run (at most `timeoutMs`). An admission recovery left
   * `unknown` (its turn was killed more often than max_resumes) is resolved, as a person would, and
   * its job (paused by it, as documented) resumed: both are recorded in `resolved`.
   */
  async settle(
    g: GatewayClient,
    runs: () => Promise<JobRunFact[]>,
    resolved: Set<string>,
    log: (line: string) => void,
    timeoutMs = 180_000,
  ): Promise<void> {
    if (this.count === 0) return;
    const deadline = Date.now() + timeoutMs;
    const due = this.instants();
    for (;;) {
      for (const job of this.jobs) {
        const snap = await g.call<{
          pending_admissions: { admission_id: string; state: string; execution_generation: number }[];
        }>('session.resume', { session_id: job.session_id });
        for (const a of snap.pending_admissions.filter((p) => p.state === 'unknown')) {
          await g.call('prompt.resolve_unknown', {
            session_id: job.session_id,
            admission_id: a.admission_id,
            execution_generation: a.execution_generation,
          });
          resolved.add(a.admission_id);
        }
      }
      const { jobs } = await g.call<{ jobs: { job_id: string; state: string }[] }>('jobs.list', {});
      for (const paused of jobs.filter((j) => j.state === 'paused'))
        await g.call('jobs.resume', { job_id: paused.job_id });
      const all = await runs();
      const open = this.jobs.flatMap((job) =>
        due.filter(
          (instant) =>
            !all.some((r) => r.job_id === job.job_id && r.instant === instant && r.state === 'settled'),
        ),
      );
      if (open.length === 0) break;
      // What is still open then is lost: check() names each instant.
      if (Date.now() > deadline) {
        log(`jobs: ${open.length} scheduled runs still open after ${timeoutMs / 1000} s`);
        break;
      }
      await sleep(200);
    }
    for (const job of this.jobs) {
      const history = await g.call<{ messages: SnapshotMessage[] }>('session.history', {
        session_id: job.session_id,
      });
      this.transcripts.set(job.session_id, history.messages);
    }
    log(`jobs settled: ${this.jobs.length} jobs, ${due.length} minutes each`);
  }

  /** Every due instant fired exactly once (see the module comment). */
  check(
    runs: readonly JobRunFact[],
    admissions: readonly AdmissionFact[],
    requests: readonly RecordedRequest[],
    /** Admissions the harness resolved as unknown. */
    resolved: ReadonlySet<string>,
  ): { tally: JobTally; violations: string[] } {
    const violations: string[] = [];
    const due = this.instants();
    const tally: JobTally = {
      jobs: this.jobs.length,
      instants: due.length * this.jobs.length,
      fired: 0,
      unknown: 0,
      lost: 0,
      duplicated: 0,
    };
    const bySubmission = new Map(admissions.map((a) => [a.submission_id, a]));
    const starts = turnStarts(requests);
    for (const job of this.jobs) {
      const mine = runs.filter((r) => r.job_id === job.job_id);
      for (const r of mine)
        if (!due.includes(r.instant) || r.kind !== 'scheduled')
          violations.push(`job ${job.job_id}: a ${r.kind} run of ${r.instant}, which was not due`);
      const messages = this.transcripts.get(job.session_id) ?? [];
      for (const instant of due) {
        const at = mine.filter((r) => r.instant === instant);
        if (at.length > 1) {
          tally.duplicated++;
          violations.push(`job ${job.job_id}: ${at.length} runs of ${instant}`);
        }
        const run = at[0];
        const admission = bySubmission.get(`job:${job.job_id}:${instant}`);
        if (run === undefined || run.state !== 'settled' || admission === undefined) {
          tally.lost++;
          violations.push(
            `job ${job.job_id}: the firing of ${instant} is lost (run ${run?.state ?? 'missing'}, admission ${admission?.state ?? 'missing'})`,
          );
          continue;
        }
        if (run.admission_id !== admission.admission_id)
          violations.push(`job ${job.job_id}: the run of ${instant} names another admission`);
        const started = starts.get(admission.admission_id) ?? 0;
        const stored = messages.filter(
          (m) => m.role === 'user' && m.admission_id === admission.admission_id,
        ).length;
        if (started > 1 + admission.resumes || stored > 1) {
          tally.duplicated++;
          violations.push(
            `job ${job.job_id}: the firing of ${instant} ran ${started} turns (${admission.resumes} resumes), stored ${stored} times`,
          );
        }
        // A completed firing's message stored twice is counted above as duplicated, not as lost too.
        if (admission.state === 'completed' && run.outcome === 'completed' && stored >= 1) tally.fired++;
        else if (admission.state === 'interrupted' && resolved.has(admission.admission_id)) tally.unknown++;
        else {
          tally.lost++;
          violations.push(
            `job ${job.job_id}: the firing of ${instant} ended ${admission.state} (run ${run.outcome}), stored ${stored} times`,
          );
        }
      }
    }
    return { tally, violations };
  }

  private writeClock(): void {
    const at = this.minute === 0 ? BASE + 30_000 : BASE + this.minute * MINUTE + 5_000;
    writeFileSync(this.clockFile, `${new Date(at).toISOString()}\n`);
  }
}
