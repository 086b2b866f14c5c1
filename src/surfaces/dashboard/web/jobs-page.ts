/**
 * The Jobs page (issue 28, docs/scheduling.md): every scheduled job the viewer may manage, with its
 * schedule, target, state, next run and last run with its outcome, and buttons that pause, resume
 * or remove it. It calls the same RPC methods as `gatehouse jobs`: jobs.list, jobs.pause,
 * jobs.resume, jobs.remove.
 */
import { clear, h } from './dom.js';
import { errorText } from './approvals-page.js';
import type { Link } from './link.js';

interface JobRow {
  job_id: string;
  name: string | null;
  schedule_text: string;
  target: { kind: 'session'; session_id: string } | { kind: 'new_session' };
  text: string;
  state: 'active' | 'paused' | 'finished';
  paused_reason: string | null;
  next_run: string | null;
  last_run: { instant: string; state: string; outcome: string | null; detail: string | null } | null;
}

export function jobsPage(link: Link): HTMLElement {
  const list = h('ul', { class: 'jobs' });
  const status = h('p', { class: 'muted', attrs: { role: 'status' } });

  /** Lists the jobs again; `said`: what the action just done says, kept over the list's own note. */
  const load = (said = ''): void => {
    void link.call<{ jobs: JobRow[] }>('jobs.list').then(
      ({ jobs }) => {
        clear(list);
        for (const job of jobs) list.appendChild(row(job));
        status.textContent = said || (jobs.length === 0 ? 'No scheduled jobs.' : '');
      },
      (error: unknown) => {
        status.textContent = errorText(error);
      },
    );
  };

  const action = (label: string, method: string, job: JobRow, done: string): HTMLElement => {
    const button = h('button', { type: 'button', text: label });
    button.addEventListener('click', () => {
      button.disabled = true;
      link.call(method, { job_id: job.job_id }).then(
        () => load(done),
        (error: unknown) => {
          button.disabled = false;
          status.textContent = errorText(error);
        },
      );
    });
    return button;
  };

  const row = (job: JobRow): HTMLElement => {
    const target =
      job.target.kind === 'session' ? `session ${job.target.session_id}` : 'a new session per run';
    const last = job.last_run
      ? `${job.last_run.instant}: ${job.last_run.outcome ?? job.last_run.state}${job.last_run.detail ? ` (${job.last_run.detail})` : ''}`
      : 'never run';
    return h(
      'li',
      { class: 'job-row', attrs: { 'data-job': job.job_id } },
      h('p', { class: 'job-title', text: `${job.name ?? job.job_id} · ${job.schedule_text} → ${target}` }),
      h('code', { class: 'job-text', text: job.text }),
      h('p', {
        class: 'job-state',
        text: job.state === 'paused' ? `paused: ${job.paused_reason ?? ''}` : job.state,
      }),
      h('p', { class: 'job-next', text: `next run: ${job.next_run ?? '—'}` }),
      h('p', { class: 'job-last', text: `last run: ${last}` }),
      job.state === 'paused'
        ? action('Resume', 'jobs.resume', job, `Resumed ${job.job_id}.`)
        : action('Pause', 'jobs.pause', job, `Paused ${job.job_id}.`),
      action('Remove', 'jobs.remove', job, `Removed ${job.job_id}.`),
    );
  };

  load();
  return h(
    'section',
    { class: 'page jobs-page' },
    h('h1', { text: 'Jobs' }),
    h('p', {
      class: 'muted',
      text: 'Scheduled jobs admit their text into a session on a schedule (gatehouse jobs add, /schedule in a chat).',
    }),
    status,
    list,
  );
}
