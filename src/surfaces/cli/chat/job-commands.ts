/**
 * The chat's `/schedule` and `/jobs` (docs/scheduling.md): scheduled jobs of this chat's session,
 * through the same jobs.* methods as the CLI and the dashboard.
 *
 *   /schedule every <seconds> <text>
 *   /schedule at <ISO instant> <text>
 *   /schedule cron <m> <h> <dom> <mon> <dow> [tz=<zone>] <text>
 *   /jobs                      list your jobs with their next and last run
 *   /jobs pause|resume|remove|run <job id>
 */
import type { ChatCommand, CommandContext } from './commands.js';

interface JobLine {
  job_id: string;
  name: string | null;
  schedule_text: string;
  state: string;
  paused_reason: string | null;
  next_run: string | null;
  last_run: { instant: string; outcome: string | null; state: string } | null;
  text: string;
}

const SCHEDULE_USAGE =
  'usage: /schedule every <seconds> <text> · /schedule at <ISO instant> <text> · /schedule cron <m> <h> <dom> <mon> <dow> [tz=<zone>] <text>';

/** The jobs.add params a /schedule line asks for, or why it cannot be read. */
export function scheduleParams(args: string): Record<string, unknown> | string {
  const words = args.split(/\s+/).filter(Boolean);
  const kind = words.shift();
  let when: Record<string, unknown>;
  if (kind === 'every') {
    const seconds = Number(words.shift());
    if (!Number.isInteger(seconds)) return SCHEDULE_USAGE;
    when = { every_s: seconds };
  } else if (kind === 'at') {
    const instant = words.shift();
    if (instant === undefined) return SCHEDULE_USAGE;
    when = { at: instant };
  } else if (kind === 'cron') {
    if (words.length < 5) return SCHEDULE_USAGE;
    when = { cron: words.splice(0, 5).join(' ') };
    if (words[0]?.startsWith('tz=')) when.tz = words.shift()!.slice(3);
  } else return SCHEDULE_USAGE;
  if (words.length === 0) return SCHEDULE_USAGE;
  return { ...when, text: words.join(' ') };
}

function describe(job: JobLine): string {
  const last = job.last_run
    ? `last ${job.last_run.instant} ${job.last_run.outcome ?? job.last_run.state}`
    : 'never run';
  const state = job.state === 'paused' ? `paused: ${job.paused_reason ?? ''}` : job.state;
  return `${job.job_id}  ${job.schedule_text}  [${state}]  next ${job.next_run ?? '-'}; ${last}; "${job.text.slice(0, 60)}"`;
}

async function schedule(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  const params = scheduleParams(ctx.args);
  if (typeof params === 'string') return say(`(${params})`);
  const { job } = await ctx.call<{ job: JobLine }>('jobs.add', {
    request_id: ctx.requestId,
    session_id: ctx.sessionId,
    ...params,
  });
  say(`(scheduled ${describe(job)})`);
}

const ACTIONS: Record<string, string> = { pause: 'jobs.pause', resume: 'jobs.resume', remove: 'jobs.remove' };

async function jobs(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  const [action, id] = ctx.args.split(/\s+/).filter(Boolean);
  if (action === undefined) {
    const { jobs: list } = await ctx.call<{ jobs: JobLine[] }>('jobs.list', {});
    if (list.length === 0) return say('(no scheduled jobs: /schedule adds one)');
    for (const job of list) say(describe(job));
    return;
  }
  if (id === undefined || (action !== 'run' && ACTIONS[action] === undefined))
    return say('(usage: /jobs · /jobs pause|resume|remove|run <job id>)');
  if (action === 'run') {
    const run = await ctx.call<{ session_id: string }>('jobs.run_now', {
      job_id: id,
      request_id: ctx.requestId,
    });
    return say(`(${id} runs now in session ${run.session_id})`);
  }
  await ctx.call(ACTIONS[action]!, { job_id: id });
  say(`(${action === 'remove' ? 'removed' : action === 'pause' ? 'paused' : 'resumed'} ${id})`);
}

export const JOB_COMMANDS: readonly ChatCommand[] = [
  {
    name: 'schedule',
    usage: '/schedule every|at|cron … <text>',
    summary: 'admit <text> into this session on a schedule (docs/scheduling.md)',
    run: schedule,
  },
  {
    name: 'jobs',
    usage: '/jobs [pause|resume|remove|run <id>]',
    summary: 'list your scheduled jobs (next and last run), or pause, resume, remove or run one',
    run: jobs,
  },
];
