/**
 * The `jobs` toolset (issue 28, docs/scheduling.md "From the agent"): the model schedules a job
 * that admits a text into its own session later (`schedule_job`), lists the jobs of its session
 * (`list_jobs`) and removes one (`remove_job`).
 *
 * A job acts later, unattended, and again and again, so creating or removing one always goes through
 * the approval path, and a session's yolo does not answer for the human: only the operator's
 * `approvals.mode` decides without asking (`off` runs it, `deny` refuses it). The approval is asked
 * only for a request the gateway would accept: a schedule it cannot read is a tool error at once.
 *
 * The runtime does not reach the domain: the gateway hands the tools an `AgentJobs` port
 * (`withAgentJobs`), bound to the session the turn runs in.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { ApprovalOutcome, ToolContext, ToolDefinition, ToolResult } from '../types.js';

export type AgentJobSchedule = { cron: string; tz?: string } | { every_s: number } | { at: string };

export interface AgentJobRequest {
  /** Deterministic per call (admission + arguments): a repeat after a crash adds nothing more. */
  request_id: string;
  name?: string;
  schedule: AgentJobSchedule;
  text: string;
}

/** A job as the model is told about it. */
export interface AgentJobInfo {
  job_id: string;
  name: string | null;
  schedule_text: string;
  text: string;
  state: string;
  next_run: string | null;
  last_run: { instant: string; outcome: string | null } | null;
}

/** A refusal the model reads (a schedule that cannot be, a job not of this session), or the value. */
export type AgentJobAnswer<T> = { ok: true; value: T } | { ok: false; message: string };

/** What the tools may do, each call on the session it runs in (the gateway binds it). */
export interface AgentJobs {
  /** Checks a request without storing anything; the schedule in words. */
  check(sessionId: string, request: Omit<AgentJobRequest, 'request_id'>): Promise<AgentJobAnswer<string>>;
  add(sessionId: string, request: AgentJobRequest): Promise<AgentJobAnswer<AgentJobInfo>>;
  /** The jobs whose target is this session. */
  list(sessionId: string): Promise<AgentJobAnswer<AgentJobInfo[]>>;
  /** A job of this session only; the removed job. */
  remove(sessionId: string, jobId: string): Promise<AgentJobAnswer<AgentJobInfo>>;
}

function fail(content: string): ToolResult {
  return { content, isError: true };
}

/** A refusal's message as a sentence, to go on with another. */
function sentence(message: string): string {
  return /[.!?]$/.test(message) ? message : `${message}.`;
}

/** The model's schedule arguments: exactly one of cron (with tz), every_s and at. */
function scheduleOf(args: Record<string, unknown>): AgentJobSchedule | string {
  const given = (['cron', 'every_s', 'at'] as const).filter((f) => args[f] !== undefined);
  if (given.length !== 1)
    return 'Give exactly one of `cron` (five fields, with an optional `tz`), `every_s` (seconds) and `at` (an ISO instant).';
  if (args.tz !== undefined && given[0] !== 'cron') return '`tz` goes with `cron` only.';
  if (args.tz !== undefined && (typeof args.tz !== 'string' || args.tz.trim() === ''))
    return '`tz` must be an IANA time zone name, e.g. Europe/Berlin.';
  switch (given[0]) {
    case 'cron':
      if (typeof args.cron !== 'string' || args.cron.trim() === '')
        return '`cron` must be a five-field cron expression, e.g. "0 8 * * *".';
      return { cron: args.cron, ...(typeof args.tz === 'string' ? { tz: args.tz } : {}) };
    case 'every_s':
      if (typeof args.every_s !== 'number') return '`every_s` must be a whole number of seconds.';
      return { every_s: args.every_s };
    default:
      if (typeof args.at !== 'string' || args.at.trim() === '')
        return '`at` must be an ISO 8601 instant, e.g. 2026-12-24T18:00:00Z.';
      return { at: args.at };
  }
}

function requestOf(args: Record<string, unknown>): Omit<AgentJobRequest, 'request_id'> | string {
  const schedule = scheduleOf(args);
  if (typeof schedule === 'string') return schedule;
  if (typeof args.text !== 'string' || args.text.trim() === '')
    return '`text` must be the non-empty message admitted at each run.';
  if (args.text.length > 100_000) return '`text` may hold at most 100000 characters.';
  if (args.name !== undefined && (typeof args.name !== 'string' || args.name.trim() === ''))
    return '`name` must be a non-empty string.';
  return {
    schedule,
    text: args.text,
    ...(typeof args.name === 'string' ? { name: args.name.trim().slice(0, 200) } : {}),
  };
}

/** The same call of the same turn names the same job (a resumed turn adds it once). */
function requestIdOf(context: ToolContext, args: Record<string, unknown>): string {
  if (context.admissionId === undefined) return `agent:${randomUUID()}`;
  const digest = createHash('sha256').update(JSON.stringify(args)).digest('hex').slice(0, 16);
  return `agent:${context.admissionId}:${digest}`;
}

function describeJob(job: AgentJobInfo): string {
  const last = job.last_run
    ? `last run ${job.last_run.instant} ${job.last_run.outcome ?? 'going'}`
    : 'not run yet';
  const next = job.next_run ? `next run ${job.next_run}` : 'no next run';
  return `${job.job_id}${job.name ? ` (${job.name})` : ''}: ${job.schedule_text} [${job.state}]; ${next}; ${last}; text: ${job.text}`;
}

/** Why an approval ended without permission. */
function notApproved(outcome: Exclude<ApprovalOutcome, { kind: 'approved' }>, what: string): ToolResult {
  switch (outcome.kind) {
    case 'denied':
      return fail(
        outcome.by === 'config'
          ? `Denied by configuration (approvals.mode: deny). ${what}`
          : `The user denied this. ${what}`,
      );
    case 'timeout':
      return fail(`Nobody answered the approval request in time. ${what}`);
    case 'cancelled':
      return fail(`Interrupted while waiting for approval. ${what}`);
  }
}

/** Asks a human (yolo does not answer for them); null when approved. */
async function approve(context: ToolContext, command: string, reason: string, what: string) {
  const outcome = await context.requestApproval({
    kind: 'edit',
    command,
    reason,
    cwd: context.cwd,
    gate: { yolo: false, flagged: true },
  });
  return outcome.kind === 'approved' ? null : notApproved(outcome, what);
}

const UNAVAILABLE: AgentJobs = {
  check: () => Promise.resolve({ ok: false, message: 'Scheduled jobs are not available in this session.' }),
  add: () => Promise.resolve({ ok: false, message: 'Scheduled jobs are not available in this session.' }),
  list: () => Promise.resolve({ ok: false, message: 'Scheduled jobs are not available in this session.' }),
  remove: () => Promise.resolve({ ok: false, message: 'Scheduled jobs are not available in this session.' }),
};

/** The three tools on `jobs` (the registry's copy answers that jobs are not available). */
export function createJobTools(jobs: AgentJobs = UNAVAILABLE): ToolDefinition[] {
  const scheduleJob: ToolDefinition = {
    name: 'schedule_job',
    toolset: 'jobs',
    description:
      'Schedule a job that sends `text` to this session later, as a new message, on a schedule: give ' +
      'exactly one of `cron` (five fields, read in `tz`, default UTC), `every_s` (an interval in ' +
      'seconds, at least 10) or `at` (one ISO instant). The user must approve it. Use it for ' +
      '"remind me", "every morning", "check again in an hour".',
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string', description: 'The message admitted into this session at each run.' },
        cron: { type: 'string', description: 'A five-field cron expression, e.g. "0 8 * * *".' },
        tz: { type: 'string', description: 'The IANA time zone of `cron`, e.g. Europe/Berlin.' },
        every_s: { type: 'number', description: 'An interval in seconds (at least 10).' },
        at: { type: 'string', description: 'One instant, ISO 8601, e.g. 2026-12-24T18:00:00Z.' },
        name: { type: 'string', description: 'A short name the user will recognise.' },
      },
      required: ['text'],
      additionalProperties: false,
    },
    marksOwnStart: true,
    async run(args, context) {
      const request = requestOf(args);
      if (typeof request === 'string') return fail(`${request} No job was scheduled.`);
      const checked = await jobs.check(context.sessionId, request);
      if (!checked.ok) return fail(`${sentence(checked.message)} No job was scheduled.`);
      const refusal = await approve(
        context,
        `schedule_job${request.name ? ` "${request.name}"` : ''}: ${checked.value}, admitting into this session: ${request.text}`,
        'creates a scheduled job: it sends this text to the session on its schedule until it is removed',
        'No job was scheduled.',
      );
      if (refusal !== null) return refusal;
      if (context.signal.aborted) return fail('Interrupted. No job was scheduled.');
      await context.markStarted();
      const added = await jobs.add(context.sessionId, { ...request, request_id: requestIdOf(context, args) });
      if (!added.ok) return fail(`${sentence(added.message)} No job was scheduled.`);
      return {
        content: `Scheduled ${describeJob(added.value)}. The user sees it in \`gatehouse jobs list\` and /jobs.`,
      };
    },
  };

  const listJobs: ToolDefinition = {
    name: 'list_jobs',
    toolset: 'jobs',
    description: "List this session's scheduled jobs: schedule, state, next and last run.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    async run(_args, context) {
      const listed = await jobs.list(context.sessionId);
      if (!listed.ok) return fail(listed.message);
      if (listed.value.length === 0) return { content: 'This session has no scheduled jobs.' };
      return { content: listed.value.map(describeJob).join('\n') };
    },
  };

  const removeJob: ToolDefinition = {
    name: 'remove_job',
    toolset: 'jobs',
    description:
      "Remove one of this session's scheduled jobs by its id (from list_jobs). The user must approve it.",
    parameters: {
      type: 'object',
      properties: { job_id: { type: 'string', description: 'The job id, e.g. job_3f9a0c2b71d4.' } },
      required: ['job_id'],
      additionalProperties: false,
    },
    marksOwnStart: true,
    async run(args, context) {
      if (typeof args.job_id !== 'string' || args.job_id.trim() === '')
        return fail("`job_id` must be the id of one of this session's jobs (see list_jobs).");
      const listed = await jobs.list(context.sessionId);
      if (!listed.ok) return fail(listed.message);
      const job = listed.value.find((j) => j.job_id === args.job_id);
      if (job === undefined)
        return fail(
          `This session has no job ${args.job_id} (list_jobs shows its jobs). Nothing was removed.`,
        );
      const refusal = await approve(
        context,
        `remove_job ${describeJob(job)}`,
        'removes a scheduled job: it will not run again',
        'The job was not removed.',
      );
      if (refusal !== null) return refusal;
      await context.markStarted();
      const removed = await jobs.remove(context.sessionId, job.job_id);
      if (!removed.ok) return fail(`${sentence(removed.message)} Nothing was removed.`);
      return { content: `Removed ${job.job_id}; it will not run again.` };
    },
  };

  return [scheduleJob, listJobs, removeJob];
}

/** The tools with the `jobs` toolset's tools bound to the gateway's jobs. */
export function withAgentJobs(tools: readonly ToolDefinition[], jobs: AgentJobs): ToolDefinition[] {
  const bound = new Map(createJobTools(jobs).map((tool) => [tool.name, tool]));
  return tools.map((tool) => bound.get(tool.name) ?? tool);
}
