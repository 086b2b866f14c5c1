/**
 * `gatehouse jobs add|list|pause|resume|remove|run-now`: the scheduled jobs of the running gateway,
 * through the same RPC methods (jobs.*) the chat and the dashboard call (docs/scheduling.md).
 */
import { randomUUID } from 'node:crypto';
import { DaemonError } from '../../../daemon/errors.js';
import type { RpcCallError } from '../../client/rpc-client.js';
import { withLink, type LinkClient } from './with-link.js';
import { say } from '../shared.js';
import { visible } from '../visible.js';

interface RunView {
  instant: string;
  kind: string;
  state: string;
  outcome: string | null;
  session_id: string | null;
  detail: string | null;
}

export interface JobView {
  job_id: string;
  name: string | null;
  schedule_text: string;
  target: { kind: 'session'; session_id: string } | { kind: 'new_session' };
  text: string;
  deliver: string;
  catch_up: string;
  overlap: string;
  state: string;
  paused_reason: string | null;
  failures: number;
  next_run: string | null;
  last_run: RunView | null;
}

export interface AddFlags {
  cron?: string;
  tz?: string;
  every?: string;
  at?: string;
  session?: string;
  newSession?: boolean;
  cwd?: string;
  text: string;
  name?: string;
  catchUp?: string;
  freshness?: string;
  overlap?: string;
  maxFailures?: string;
  deliver?: string;
  requestId?: string;
  json?: boolean;
}

/** Refusals worded for this command: an unknown id names the list; the caller's other mistakes exit 2. */
function explain(error: RpcCallError): DaemonError | null {
  if (error.reason === 'not_found')
    return new DaemonError('invalid_input', `${error.message} ("gatehouse jobs list" shows the ids)`);
  if (
    ['invalid_params', 'invalid_schedule', 'job_busy', 'permission_denied', 'no_home_channel'].includes(
      error.reason,
    )
  )
    return new DaemonError('invalid_input', error.message);
  return null;
}

const linked = <T>(call: (client: LinkClient) => Promise<T>): Promise<T> => withLink(call, explain);

function whole(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n))
    throw new DaemonError('invalid_input', `${flag} takes a whole number, not "${value}"`);
  return n;
}

/** One job as two lines: what and when, then its next and last run. */
export function describeJob(job: JobView): string {
  const target =
    (job.target.kind === 'session' ? `session ${job.target.session_id}` : 'a new session per run') +
    (job.deliver === 'session' ? '' : ` (result to the ${job.deliver.slice('home:'.length)} home channel)`);
  const last = job.last_run
    ? `last ${job.last_run.instant} ${job.last_run.outcome ?? job.last_run.state}${job.last_run.detail ? ` (${visible(job.last_run.detail)})` : ''}`
    : 'never run';
  const state = job.state === 'paused' ? `paused: ${visible(job.paused_reason ?? '')}` : job.state;
  return (
    `${job.job_id}${job.name ? ` ${visible(job.name)}` : ''}  ${job.schedule_text} → ${target}  [${state}]\n` +
    `    next ${job.next_run ?? '-'}; ${last}; text: ${visible(job.text.slice(0, 80))}`
  );
}

export async function addJob(flags: AddFlags): Promise<void> {
  const params: Record<string, unknown> = {
    request_id: flags.requestId ?? randomUUID(),
    text: flags.text,
    ...(flags.name === undefined ? {} : { name: flags.name }),
    ...(flags.cron === undefined ? {} : { cron: flags.cron }),
    ...(flags.tz === undefined ? {} : { tz: flags.tz }),
    ...(flags.every === undefined ? {} : { every_s: whole(flags.every, '--every') }),
    ...(flags.at === undefined ? {} : { at: flags.at }),
    ...(flags.session === undefined ? {} : { session_id: flags.session }),
    ...(flags.newSession ? { new_session: flags.cwd === undefined ? {} : { cwd: flags.cwd } } : {}),
    ...(flags.catchUp === undefined ? {} : { catch_up: flags.catchUp }),
    ...(flags.freshness === undefined ? {} : { freshness_s: whole(flags.freshness, '--freshness') }),
    ...(flags.overlap === undefined ? {} : { overlap: flags.overlap }),
    ...(flags.deliver === undefined ? {} : { deliver: flags.deliver }),
    ...(flags.maxFailures === undefined ? {} : { max_failures: whole(flags.maxFailures, '--max-failures') }),
  };
  if (flags.cwd !== undefined && !flags.newSession)
    throw new DaemonError(
      'invalid_input',
      '--cwd goes with --new-session (the launch of each run’s session)',
    );
  const { job } = await linked((client) => client.call<{ job: JobView }>('jobs.add', params));
  if (flags.json) return say(JSON.stringify({ job }, null, 2));
  say(`Added ${describeJob(job)}`);
}

export async function listJobs(flags: { json?: boolean }): Promise<void> {
  const { jobs } = await linked((client) => client.call<{ jobs: JobView[] }>('jobs.list', {}));
  if (flags.json) return say(JSON.stringify({ jobs }, null, 2));
  if (jobs.length === 0) return say('No scheduled jobs.');
  for (const job of jobs) say(describeJob(job));
}

export async function changeJob(action: 'pause' | 'resume' | 'remove', jobId: string): Promise<void> {
  await linked((client) => client.call(`jobs.${action}`, { job_id: jobId }));
  const done = { pause: 'Paused', resume: 'Resumed', remove: 'Removed' }[action];
  say(`${done} ${jobId}.`);
}

export async function runJobNow(jobId: string, flags: { requestId?: string; json?: boolean }): Promise<void> {
  const run = await linked((client) =>
    client.call<{ session_id: string; admission_id: string; duplicate: boolean }>('jobs.run_now', {
      job_id: jobId,
      request_id: flags.requestId ?? randomUUID(),
    }),
  );
  if (flags.json) return say(JSON.stringify(run, null, 2));
  say(`${jobId} runs now in session ${run.session_id} (admission ${run.admission_id}).`);
}
