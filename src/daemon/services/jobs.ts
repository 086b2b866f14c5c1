/**
 * Scheduled jobs in the daemon (issue 28, docs/scheduling.md): the runner and the jobs.* service on
 * the gateway's stores and local sessions, the clock they read, and in a cluster the lease
 * (`jobs:<profile>`) that lets one instance at a time run them.
 *
 * The clock is the daemon's (test-clock.ts): the system's, except in tests (GATEHOUSE_TEST_CLOCK).
 */
import type { ClusterStore } from '../../domain/ports/cluster-store.js';
import type { JobStore } from '../../domain/ports/job-store.js';
import type { LocalSessionStore } from '../../domain/ports/local-store.js';
import { homeDeliveryId, ownerPrincipal, type Job } from '../../domain/jobs/job.js';
import type { RunRow } from '../../domain/ports/job-store.js';
import type { DeliveryLedger } from '../../domain/ports/delivery-ledger.js';
import type { MessagingGateway } from '../../domain/messaging/gateway.js';
import type { HomeChannel } from '../../domain/session/context.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import { JobRunner } from '../../domain/jobs/runner.js';
import { JobService } from '../../domain/jobs/service.js';
import type { LocalSessions } from '../../domain/local/service.js';
import type { JobStatus } from '../daemon.js';
import { daemonClock } from '../test-clock.js';

/** At most this many jobs are written to gateway.json for `gatehouse status`. */
const STATUS_JOBS = 50;

export interface OpenJobs {
  runner: JobRunner;
  service: JobService;
  status(): Promise<JobStatus[]>;
}

export function openJobs(options: {
  env: NodeJS.ProcessEnv;
  profile: string;
  store: JobStore;
  local: LocalSessionStore;
  sessions: LocalSessions;
  /** In a cluster: the store whose `jobs` lease names the one instance running the jobs. */
  cluster: { store: ClusterStore; leaseS: number } | null;
  fault: (point: string) => void;
  onError: (error: unknown, context: string) => void;
  /** Where `home:<platform>` results go: the ledger, the configured home channels, and their sender. */
  home: {
    ledger: DeliveryLedger;
    channels: readonly HomeChannel[];
    /** The running messaging gateway, when this instance has one. */
    messaging: () => MessagingGateway | null;
  };
}): OpenJobs {
  const clock = daemonClock(options.env);
  const test = clock.test;
  const { sessions, cluster } = options;
  const runner = new JobRunner({
    store: options.store,
    profile: options.profile,
    clock,
    // A test clock moves in jumps: look at it often, so a test does not wait on the tick.
    tickMs: test ? 100 : 1000,
    fault: options.fault,
    onError: options.onError,
    ...(cluster
      ? {
          mayRun: async () => {
            const taken = await cluster.store.take('jobs', options.profile, cluster.leaseS);
            return taken.kind !== 'held';
          },
        }
      : {}),
    firing: {
      fire: async (job, run) => {
        const principal = ownerPrincipal(job.row);
        let sessionId: string;
        if (job.target.kind === 'session') sessionId = job.target.session_id;
        else {
          // A job's launch never carries MCP values (jobs.add refuses them; migration 029 scrubbed
          // older ones): a server that names some waits for them rather than start without.
          const created = await sessions.create(
            principal,
            { ...job.target.launch, request_id: run.submission_id },
            undefined,
            { none: true },
          );
          sessionId = created.session_id as string;
        }
        const ack = await sessions.inputs.submit(principal, {
          session_id: sessionId,
          submission_id: run.submission_id,
          text: job.row.text,
        });
        return { session_id: sessionId, admission_id: ack.admission_id as string };
      },
      deliverHome: async (job, run, platform) => {
        const channel = options.home.channels.find((home) => home.platform === platform);
        if (channel === undefined) {
          options.onError(
            new Error(
              `job ${job.row.job_id}: no home channel for ${platform} any more; its result stays in the session`,
            ),
            'home channel delivery',
          );
          return;
        }
        const answer = await finalAnswer(sessions, job, run);
        if (answer === null) return;
        const delivery = await options.home.ledger.recordReply({
          turnId: homeDeliveryId(run.submission_id),
          sessionKey: `job:${job.row.job_id}`,
          sessionId: run.session_id!,
          target: { platform, chat_id: channel.chat_id, thread_id: null, reply_to: null },
          text: `${job.row.name ?? job.row.job_id} (scheduled ${run.instant}):\n\n${answer}`,
          silent: false,
        });
        // Not awaited: a failed send stays owed on the ledger, for the gateway's retries and sweeps.
        void options.home
          .messaging()
          ?.deliverRecorded(delivery)
          .catch((error: unknown) => options.onError(error, 'home channel delivery'));
      },
      admission: async (admissionId) => {
        const row = await options.local.getAdmission(admissionId);
        return row === null ? null : { state: row.state, detail: row.detail };
      },
    },
  });
  const service = new JobService({
    store: options.store,
    profile: options.profile,
    clock,
    runner,
    checkSession: async (principal, sessionId) => {
      await sessions.info(principal, sessionId);
    },
    homePlatforms: () => options.home.channels.map((home) => home.platform),
  });
  return {
    runner,
    service,
    status: async () =>
      (await service.all()).slice(0, STATUS_JOBS).map((job) => ({
        job_id: job.job_id,
        name: job.name,
        schedule: job.schedule_text,
        state: job.state,
        next_run: job.next_run,
        last_run: job.last_run && {
          instant: job.last_run.instant,
          outcome: job.last_run.outcome,
          state: job.last_run.state,
        },
        failures: job.failures,
        paused_reason: job.paused_reason,
      })),
  };
}

/** The run's final answer: the last assistant text its admission stored; null when there is none. */
async function finalAnswer(sessions: LocalSessions, job: Job, run: RunRow): Promise<string | null> {
  let messages: TranscriptMessage[];
  try {
    const history = await sessions.reads.history(ownerPrincipal(job.row), run.session_id!, 'full');
    messages = history.messages as TranscriptMessage[];
  } catch {
    // The session was deleted (or its receipt is invalid): nothing to deliver.
    return null;
  }
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.admission_id === run.admission_id && m.role === 'assistant' && m.content) return m.content;
  }
  return null;
}
