/**
 * The jobs.* operations (issue 28, docs/scheduling.md): add, list, pause, resume, remove and
 * run-now, each checked against the caller (a job is its creator's, and every operator's of its
 * profile). The RPC methods, the chat's /schedule and /jobs and the CLI all come here.
 */
import type { McpSessionServers } from '../../runtime/mcp/config.js';
import { needsValues } from '../../runtime/mcp/values.js';
import type { Principal } from '../auth/principal.js';
import { GatewayError } from '../errors.js';
import type { JobRow, JobStore, RunRow } from '../ports/job-store.js';
import type { JobPolicy } from './decide.js';
import {
  encodeOwner,
  manualSubmissionId,
  mayManage,
  newJobId,
  POLICY_DEFAULTS,
  readJob,
  homePlatformOf,
  type Job,
  type JobDelivery,
  type JobTarget,
} from './job.js';
import type { JobClock, JobRunner } from './runner.js';
import { checkSchedule, describeSchedule, nextAfter, type Schedule } from './schedule.js';

export interface AddJobParams {
  request_id: string;
  name?: string | undefined;
  schedule: { cron: string; tz?: string | undefined } | { every_s: number } | { at: string };
  target: JobTarget;
  text: string;
  /** Where the result goes: `session` (default), or `home:<platform>` (also that home channel). */
  deliver?: JobDelivery | undefined;
  policy?: Partial<JobPolicy> | undefined;
}

export interface JobServiceOptions {
  store: JobStore;
  profile: string;
  clock: JobClock;
  runner: JobRunner;
  /** Throws unless the principal may submit to the session (it exists, is theirs or they operate it). */
  checkSession(principal: Principal, sessionId: string): Promise<void>;
  /** The platforms with a home channel configured (and enabled): where `home:<platform>` may go. */
  homePlatforms(): readonly string[];
}

/** A job as jobs.list shows it. */
export interface JobView {
  job_id: string;
  name: string | null;
  schedule: Schedule;
  schedule_text: string;
  target: JobTarget;
  text: string;
  deliver: JobDelivery;
  catch_up: JobPolicy['catch_up'];
  freshness_s: number;
  overlap: JobPolicy['overlap'];
  max_failures: number;
  /** active · paused (paused_reason says why) · finished (a one-time job that ran). */
  state: 'active' | 'paused' | 'finished';
  paused_reason: string | null;
  failures: number;
  created_at: string;
  /** The next scheduled instant (it may have passed: the job fires at the next tick); null: none. */
  next_run: string | null;
  last_run: RunView | null;
}

export interface RunView {
  instant: string;
  kind: RunRow['kind'];
  state: RunRow['state'];
  outcome: string | null;
  session_id: string | null;
  admission_id: string | null;
  detail: string | null;
}

export class JobService {
  constructor(private readonly options: JobServiceOptions) {}

  /**
   * Checks what `add` would refuse without the caller (the delivery and the schedule) and describes
   * the schedule: the agent's `schedule_job` tool asks its approval with this text.
   */
  check(params: Pick<AddJobParams, 'schedule' | 'deliver'>): { schedule: Schedule; schedule_text: string } {
    const schedule = this.validated(params, this.options.clock.now());
    return { schedule, schedule_text: describeSchedule(schedule) };
  }

  async add(principal: Principal, params: AddJobParams): Promise<{ job: JobView; duplicate: boolean }> {
    const now = this.options.clock.now();
    const schedule = this.validated(params, now);
    if (params.target.kind === 'session')
      await this.options.checkSession(principal, params.target.session_id);
    else if (!principal.capabilities.includes('session:create')) {
      throw new GatewayError('permission_denied', 'a job that creates sessions needs session:create');
    } else refuseMcpValues(params.target.launch);
    const row: JobRow = {
      job_id: newJobId(),
      profile: this.options.profile,
      request_id: params.request_id,
      owner: encodeOwner(principal),
      name: params.name ?? null,
      schedule: JSON.stringify(schedule),
      target: JSON.stringify(params.target),
      text: params.text,
      policy: JSON.stringify({ ...POLICY_DEFAULTS, ...params.policy }),
      created_at: now.toISOString(),
      last_instant: null,
      failures: 0,
      paused_reason: null,
      deliver: params.deliver ?? 'session',
    };
    const result = await this.options.store.addJob(row);
    if (result.kind === 'existing' && !mayManage(principal, result.job)) {
      throw new GatewayError('invalid_params', `request_id ${params.request_id} was used by another caller`, {
        field: 'request_id',
      });
    }
    void this.options.runner.tick();
    return { job: await this.view(result.job), duplicate: result.kind === 'existing' };
  }

  /** The schedule as stored, or the refusal of a delivery or schedule that cannot be. */
  private validated(params: Pick<AddJobParams, 'schedule' | 'deliver'>, now: Date): Schedule {
    const deliver = params.deliver ?? 'session';
    const home = homePlatformOf(deliver);
    if (home !== null && !this.options.homePlatforms().includes(home)) {
      const configured = this.options.homePlatforms();
      throw new GatewayError(
        'no_home_channel',
        `deliver: home:${home}: no home channel is configured for ${home} (home_channels in the config` +
          (configured.length > 0 ? `; configured: ${configured.join(', ')})` : ' names none)'),
        { field: 'deliver', platform: home },
      );
    }
    const schedule = scheduleOf(params.schedule, now);
    checkSchedule(schedule, now);
    return schedule;
  }

  async list(principal: Principal): Promise<{ jobs: JobView[] }> {
    const rows = await this.options.store.listJobs(this.options.profile);
    const jobs: JobView[] = [];
    for (const row of rows) if (mayManage(principal, row)) jobs.push(await this.view(row));
    return { jobs };
  }

  /** Every job of the profile, for `gatehouse status` (the control socket's owner). */
  async all(): Promise<JobView[]> {
    const rows = await this.options.store.listJobs(this.options.profile);
    return Promise.all(rows.map((row) => this.view(row)));
  }

  async pause(principal: Principal, jobId: string): Promise<{ job: JobView }> {
    const row = await this.managed(principal, jobId);
    if (row.paused_reason === null)
      await this.options.store.setPaused(jobId, `paused by ${principal.subject}`);
    return { job: await this.view((await this.options.store.getJob(jobId)) ?? row) };
  }

  async resume(principal: Principal, jobId: string): Promise<{ job: JobView }> {
    const row = await this.managed(principal, jobId);
    if (row.paused_reason !== null) await this.options.store.setPaused(jobId, null);
    void this.options.runner.tick();
    return { job: await this.view((await this.options.store.getJob(jobId)) ?? row) };
  }

  async remove(principal: Principal, jobId: string): Promise<{ removed: string }> {
    await this.managed(principal, jobId);
    await this.options.store.removeJob(jobId);
    return { removed: jobId };
  }

  /**
   * Runs the job once now, outside its schedule, named by the caller's request id (a repeat admits
   * nothing more). Refused with job_busy while its previous run is still going.
   */
  async runNow(
    principal: Principal,
    jobId: string,
    requestId: string,
  ): Promise<{
    job_id: string;
    submission_id: string;
    session_id: string;
    admission_id: string;
    duplicate: boolean;
  }> {
    const row = await this.managed(principal, jobId);
    const job = readJob(row);
    const submissionId = manualSubmissionId(jobId, requestId);
    const open = (await this.options.store.openRuns(this.options.profile)).filter((r) => r.job_id === jobId);
    const mine = (await this.options.store.recentRuns(jobId, 50)).find(
      (r) => r.submission_id === submissionId,
    );
    if (mine?.admission_id && mine.session_id) {
      return {
        job_id: jobId,
        submission_id: submissionId,
        session_id: mine.session_id,
        admission_id: mine.admission_id,
        duplicate: true,
      };
    }
    if (!mine && open.length > 0) {
      throw new GatewayError('job_busy', `job ${jobId}'s run of ${open[0]!.instant} is still going`, {
        job_id: jobId,
        instant: open[0]!.instant,
      });
    }
    const run: RunRow = mine ?? {
      job_id: jobId,
      submission_id: submissionId,
      instant: this.options.clock.now().toISOString(),
      kind: 'manual',
      state: 'pending',
      session_id: null,
      admission_id: null,
      outcome: null,
      detail: null,
      recorded_at: this.options.clock.now().toISOString(),
    };
    if (!mine) await this.options.store.recordDecision(jobId, [run], null);
    const fired = await this.options.runner.admit(job, run);
    if (fired === null) {
      const settled = (await this.options.store.recentRuns(jobId, 50)).find(
        (r) => r.submission_id === submissionId,
      );
      throw new GatewayError('invalid_params', settled?.detail ?? 'the run was not admitted', {
        job_id: jobId,
      });
    }
    return { job_id: jobId, submission_id: submissionId, ...fired, duplicate: false };
  }

  private async managed(principal: Principal, jobId: string): Promise<JobRow> {
    const row = await this.options.store.getJob(jobId);
    if (row === null || !mayManage(principal, row)) throw new GatewayError('not_found', `no job ${jobId}`);
    return row;
  }

  private async view(row: JobRow): Promise<JobView> {
    const job: Job = readJob(row);
    const [last] = await this.options.store.recentRuns(row.job_id, 1);
    const next = nextAfter(job.schedule, new Date(row.last_instant ?? row.created_at));
    const state = row.paused_reason !== null ? 'paused' : next === null ? 'finished' : 'active';
    return {
      job_id: row.job_id,
      name: row.name,
      schedule: job.schedule,
      schedule_text: describeSchedule(job.schedule),
      target: job.target,
      text: row.text,
      deliver: row.deliver as JobDelivery,
      ...job.policy,
      state,
      paused_reason: row.paused_reason,
      failures: row.failures,
      created_at: row.created_at,
      next_run: state === 'active' ? next!.toISOString() : null,
      last_run: last
        ? {
            instant: last.instant,
            kind: last.kind,
            state: last.state,
            outcome: last.outcome,
            session_id: last.session_id,
            admission_id: last.admission_id,
            detail: last.detail,
          }
        : null,
    };
  }
}

function scheduleOf(given: AddJobParams['schedule'], now: Date): Schedule {
  if ('cron' in given) return { kind: 'cron', expr: given.cron.trim(), tz: given.tz ?? 'UTC' };
  if ('every_s' in given) return { kind: 'every', seconds: given.every_s, anchor: now.toISOString() };
  const at = new Date(given.at);
  if (Number.isNaN(at.getTime()))
    throw new GatewayError(
      'invalid_schedule',
      `"${given.at}" is not an instant (ISO 8601, e.g. 2026-01-01T08:00:00Z)`,
      {
        field: 'at',
      },
    );
  return { kind: 'once', at: at.toISOString() };
}

/**
 * A job's launch is stored and its sessions start unattended, after restarts too, so its own MCP
 * servers can carry no env or header values: those are held in memory only, never stored (docs/
 * decisions.md "Session MCP server values in memory only"). Refused, rather than stored or dropped.
 */
function refuseMcpValues(launch: { mcp_servers?: McpSessionServers | undefined }): void {
  for (const [name, server] of Object.entries(launch.mcp_servers ?? {}))
    if (('command' in server || 'url' in server) && needsValues(server))
      throw new GatewayError(
        'invalid_params',
        `the MCP server "${name}" of the job's new_session has env or headers: a job's launch is stored and its sessions start unattended, so it cannot carry values only memory may hold; configure the server in the profile's mcp_servers (config.yaml) instead`,
        { field: 'new_session.mcp_servers' },
      );
}
