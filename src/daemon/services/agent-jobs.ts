/**
 * The `jobs` toolset's port (runtime/tools/jobs.ts) on the job service: what the agent of a session
 * may do with scheduled jobs, and as whom.
 *
 * A job the agent schedules targets its own session only, and runs as the session's owner bound to
 * that one session with read and submit alone (never session:create, never an operator): no wider
 * than the session it came from. The owner sees and manages it like any job of theirs. The agent
 * lists and removes only the jobs whose target is its session.
 */
import type { Principal, PrincipalProvider } from '../../domain/auth/principal.js';
import { makePrincipal } from '../../domain/auth/principal.js';
import { GatewayError } from '../../domain/errors.js';
import type { JobService, JobView } from '../../domain/jobs/service.js';
import type { LocalSessionStore } from '../../domain/ports/local-store.js';
import type { AgentJobAnswer, AgentJobInfo, AgentJobs } from '../../runtime/tools/jobs.js';

function info(job: JobView): AgentJobInfo {
  return {
    job_id: job.job_id,
    name: job.name,
    schedule_text: job.schedule_text,
    text: job.text,
    state: job.state,
    next_run: job.next_run,
    last_run: job.last_run && { instant: job.last_run.instant, outcome: job.last_run.outcome },
  };
}

export function agentJobs(options: {
  profile: string;
  local: LocalSessionStore;
  jobs: () => JobService | null;
  onError: (error: unknown, context: string) => void;
}): AgentJobs {
  const principalOf = async (sessionId: string): Promise<Principal> => {
    const row = await options.local.getLocalSession(sessionId);
    if (row === null || row.profile !== options.profile)
      throw new GatewayError('not_found', `no session ${sessionId}`);
    return makePrincipal(
      row.owner.subject,
      row.owner.provider as PrincipalProvider,
      options.profile,
      ['session:read', 'session:submit'],
      [sessionId],
    );
  };
  /** The service's refusals are the model's to read; anything else is logged and said plainly. */
  const answer = async <T>(
    what: string,
    work: (jobs: JobService) => Promise<T>,
  ): Promise<AgentJobAnswer<T>> => {
    const jobs = options.jobs();
    if (jobs === null)
      return { ok: false, message: 'Scheduled jobs are not available yet; try again shortly' };
    try {
      return { ok: true, value: await work(jobs) };
    } catch (error) {
      if (error instanceof GatewayError) return { ok: false, message: error.message };
      options.onError(error, what);
      return { ok: false, message: 'The gateway could not do this now (its log says why)' };
    }
  };
  const ofSession = async (jobs: JobService, sessionId: string): Promise<JobView[]> =>
    (await jobs.list(await principalOf(sessionId))).jobs.filter(
      (job) => job.target.kind === 'session' && job.target.session_id === sessionId,
    );
  return {
    check: (_sessionId, request) =>
      answer('schedule_job', (jobs) => Promise.resolve(jobs.check(request).schedule_text)),
    add: (sessionId, request) =>
      answer('schedule_job', async (jobs) => {
        const { job } = await jobs.add(await principalOf(sessionId), {
          request_id: request.request_id,
          name: request.name,
          schedule: request.schedule,
          target: { kind: 'session', session_id: sessionId },
          text: request.text,
        });
        return info(job);
      }),
    list: (sessionId) => answer('list_jobs', async (jobs) => (await ofSession(jobs, sessionId)).map(info)),
    remove: (sessionId, jobId) =>
      answer('remove_job', async (jobs) => {
        const job = (await ofSession(jobs, sessionId)).find((j) => j.job_id === jobId);
        if (job === undefined) throw new GatewayError('not_found', `this session has no job ${jobId}`);
        await jobs.remove(await principalOf(sessionId), jobId);
        return info(job);
      }),
  };
}
