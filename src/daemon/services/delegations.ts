/**
 * Background delegations in the daemon (issue 28, docs/scheduling.md "Background delegations"): the
 * runner and the delegation.* service on the gateway's stores and local sessions, the `delegate`
 * tool's port, what a parent's reset or deletion does, and in a cluster the lease
 * (`delegations:<profile>`) that lets one instance at a time carry the delegations on.
 */
import { MEMBER_CAPABILITIES, makePrincipal, type PrincipalProvider } from '../../domain/auth/principal.js';
import { GatewayError } from '../../domain/errors.js';
import { toolRequestId } from '../../domain/delegations/delegation.js';
import { DelegationRunner } from '../../domain/delegations/runner.js';
import { DelegationService, type DelegationLimits } from '../../domain/delegations/service.js';
import type { LocalSessions } from '../../domain/local/service.js';
import type { ClusterStore } from '../../domain/ports/cluster-store.js';
import type { DelegationStore } from '../../domain/ports/delegation-store.js';
import type { LocalSessionStore } from '../../domain/ports/local-store.js';
import type { TranscriptMessage } from '../../domain/vocabulary.js';
import type { DelegatePort } from '../../runtime/tools/delegate.js';

export interface OpenDelegations {
  runner: DelegationRunner;
  service: DelegationService;
  /** What the `delegate` tool calls. */
  port: DelegatePort;
}

export function openDelegations(options: {
  profile: string;
  store: DelegationStore;
  local: LocalSessionStore;
  sessions: LocalSessions;
  limits: DelegationLimits;
  profileMcp: readonly string[];
  cluster: { store: ClusterStore; leaseS: number } | null;
  fault: (point: string) => void;
  onError: (error: unknown, context: string) => void;
}): OpenDelegations {
  const { sessions, local, cluster } = options;
  const runner = new DelegationRunner({
    store: options.store,
    profile: options.profile,
    now: () => new Date(),
    tickMs: 1000,
    fault: options.fault,
    onError: options.onError,
    ...(cluster ? { mayRun: leaseHolder(cluster, options.profile) } : {}),
    sessions: {
      createChild: async (principal, params, parentId) =>
        (await sessions.create(principal, params, undefined, { inheritFrom: parentId })).session_id as string,
      submit: async (principal, sessionId, submissionId, text) =>
        (
          await sessions.inputs.submit(principal, {
            session_id: sessionId,
            submission_id: submissionId,
            text,
          })
        ).admission_id as string,
      admission: async (admissionId) => {
        const row = await local.getAdmission(admissionId);
        return row === null ? null : { state: row.state, detail: row.detail };
      },
      finalAnswer: async (principal, sessionId, admissionId) => {
        let messages: TranscriptMessage[];
        try {
          messages = (await sessions.reads.history(principal, sessionId, 'full'))
            .messages as TranscriptMessage[];
        } catch {
          return null;
        }
        const last = messages.findLast(
          (m) => m.admission_id === admissionId && m.role === 'assistant' && m.content,
        );
        return last?.content ?? null;
      },
      stopAdmission: async (principal, sessionId, admissionId) => {
        const row = await local.getAdmission(admissionId);
        if (row === null) return;
        if (row.state === 'queued') await sessions.inputs.cancel(principal, sessionId, admissionId);
        else if (row.state === 'running' && row.generation !== null)
          await sessions.interrupt(principal, sessionId, row.generation).catch((error: unknown) => {
            // The turn ended (or moved on) meanwhile: nothing is left to stop.
            if (!(error instanceof GatewayError) || error.reason !== 'stale_generation') throw error;
          });
      },
    },
  });
  const service = new DelegationService({
    store: options.store,
    profile: options.profile,
    runner,
    limits: options.limits,
    now: () => new Date(),
    parentPolicy: async (principal, sessionId) => {
      await sessions.authorize(principal, sessionId, 'session:submit');
      const receipt = await sessions.receiptForTurn(sessionId);
      if (receipt === null)
        throw new GatewayError('permission_denied', `session ${sessionId} is paused: its receipt is invalid`);
      return receipt.policy;
    },
    checkRead: (principal, sessionId) => sessions.authorize(principal, sessionId, 'session:read'),
    profileMcp: () => options.profileMcp,
  });
  const port: DelegatePort = {
    start: async (request) => {
      // The tool acts for the session's owner: the child is theirs, as the parent is.
      const row = await local.getLocalSession(request.sessionId);
      if (row === null) throw new Error(`no session ${request.sessionId}`);
      const principal = makePrincipal(
        row.owner.subject,
        row.owner.provider as PrincipalProvider,
        row.profile,
        MEMBER_CAPABILITIES,
      );
      const { delegation, duplicate } = await service.start(principal, {
        session_id: request.sessionId,
        request_id: toolRequestId(request.admissionId, request.toolCallId),
        task: request.task,
        child: request.toolsets === undefined ? {} : { toolsets: request.toolsets },
      });
      return {
        delegation_id: delegation.delegation_id,
        child_session_id: delegation.child_session_id,
        duplicate,
      };
    },
  };
  // QUE-2: a reset stops the session's delegations but the kept ones; a deletion stops them all.
  sessions.events.on('transcript:replaced', (e) => {
    if (e.kind === 'reset')
      void service
        .parentReset(e.logical_id)
        .catch((error: unknown) => options.onError(error, 'delegations of a reset session'));
  });
  sessions.events.on('session:deleted', (e) => {
    void service
      .parentDeleted(e.logical_id)
      .catch((error: unknown) => options.onError(error, 'delegations of a deleted session'));
  });
  // A child's task that settles is reported at once, not at the next tick.
  sessions.events.on('turn:settled', () => void runner.tick());
  return { runner, service, port };
}

/**
 * Whether this instance holds the lease `delegations:<profile>`, taken (and renewed) at most once a
 * second: a pass runs at every settled turn, and each would otherwise write the lease.
 */
function leaseHolder(
  cluster: { store: ClusterStore; leaseS: number },
  profile: string,
): () => Promise<boolean> {
  let checked = 0;
  let holds = false;
  return async () => {
    if (Date.now() - checked < 1000) return holds;
    holds = (await cluster.store.take('delegations', profile, cluster.leaseS)).kind !== 'held';
    checked = Date.now();
    return holds;
  };
}
