/**
 * Gateway-owned local sessions (SPEC LOC-1..12, AUTH-4/5, REC-1..3): creation with a private receipt,
 * viewers that attach and detach, durable admissions run in FIFO order by the scheduler, prompts
 * answered by exact id, and cold-start recovery. Surfaces (the RPC methods) call this; it knows
 * nothing of sockets or SQL.
 */
import type { ApprovalResponse, ClarifyResponse, PromptBroker } from '../../runtime/approvals/broker.js';
import type { AdmissionRow, LocalSessionRow, LocalSessionStore } from '../ports/local-store.js';
import { recoverOrphans } from './recovery.js';
import { RECOVERY_DEFAULTS, type RecoverySettings } from '../session/step-resume.js';
import type { SessionStore, StoredMessage } from '../ports/session-store.js';
import type { Principal } from '../auth/principal.js';
import { Semaphore } from '../concurrency/semaphore.js';
import { GatewayError } from '../errors.js';
import { TypedEmitter } from '../events/typed-emitter.js';
import { accessFacts, mayAccess, requireAccess, type AccessRow } from './access.js';
import type { PublicEvent, SessionHub, Viewer } from './hub.js';
import { eventsSince, replayReply, SessionHubs } from './hubs.js';
import { ClusterEvents } from './cluster-events.js';
import type { SharedEventStore, StreamSignals } from '../ports/event-stream.js';
import { searchVisible } from './search.js';
import { listAll, sessionMessages, type ListingFacts } from './listing.js';
import type { CreateSessionParams, LaunchDefaults, LaunchLookups } from './launch-policy.js';
import { createLocalSession } from './creation.js';
import type { CreationReceipt } from './receipt.js';
import { ReceiptGate } from './receipt-gate.js';
import { SessionControls } from './controls.js';
import { SessionInputs } from './inputs.js';
import { titleFromMessage } from './titles.js';
import { sessionInfo, sessionSnapshot, sessionState, type SessionState } from './views.js';
import {
  LEASE_LOST,
  TurnScheduler,
  type SchedulerEvents,
  type SessionOwnership,
  type TurnJob,
  type TurnJobResult,
} from './scheduler.js';
import type { LocalCompressionDeps } from './compression.js';
import { SessionCompressor } from './compress-control.js';
import { sessionHistory } from './history.js';
import { PlatformPrompts } from './platform-prompts.js';
import type { CompressionReason, CompressOutcome } from '../../runtime/context/budget.js';
import type { CheckpointStore } from '../../runtime/checkpoints/store.js';
import { SessionCheckpoints } from './rollback.js';
import type { ControlRelay, RelayedKind } from '../cluster/relay.js';
import { RelayedControls } from './relayed-controls.js';

/** How often a snapshot re-reads a transcript that changed while it was read. */
const SNAPSHOT_READS = 5;
/** Cluster mode: how long a snapshot waits for this instance's queued events to commit. */
const SETTLE_MS = 2_000;

export interface LocalEvents extends SchedulerEvents {
  'session:created': { logical_id: string; request_id: string | null };
  'admission:committed': { logical_id: string; admission_id: string; submission_id: string };
  'session:paused': { logical_id: string; failure: string; detail: string };
  'recovery:done': {
    epoch: number;
    unknown: string[];
    /** REC-7: started turns taken over at their last durable step. */
    resumed: string[];
    queued_sessions: number;
    paused: string[];
  };
  /**
   * The session's transcript was replaced or rewritten (compression, reset, undo/rewind, retry);
   * `session_id` is the physical transcript now current. The agent cache drops its copy.
   */
  'transcript:replaced': { logical_id: string; kind: 'compression' | 'reset' | 'rewind'; session_id: string };
  /**
   * SCL-1: this instance took the session's lease and recovered it. Another instance may have run
   * turns of it meanwhile: whatever this one kept of it in memory (the cached agent) is stale.
   */
  'session:taken': { logical_id: string; unknown: string[]; resumed: string[] };
}

export interface LocalSessionsOptions {
  profile: string;
  epoch: number;
  store: LocalSessionStore;
  sessions: SessionStore;
  prompts: PromptBroker;
  launchDefaults: LaunchDefaults;
  launchLookups: LaunchLookups;
  /** Builds the turn runner once the service's callbacks exist (see turn-job.ts). */
  turnRunner: (service: LocalSessions) => (job: TurnJob) => Promise<TurnJobResult>;
  /** False while the daemon drains: new input is refused with runtime_draining. */
  accepting: () => boolean;
  maxConcurrentTurns: number;
  onError: (error: unknown, context: string) => void;
  /** Named test-only fault points; inert in production. */
  fault?: (point: string) => void;
  replayCapacity?: number;
  /** Byte cap of each session's replay buffer (`events.replay_max_bytes`). */
  replayMaxBytes?: number;
  coalesceMs?: number;
  /**
   * The sessions whose agent is live in memory (the agent cache, keyed by logical id for local
   * sessions). Absent: an agent counts as live once it started in this epoch.
   */
  agents?: { has(logicalId: string): boolean; keys(): Iterable<string> };
  /** The summary model and context settings of compression (LIN-1); without it nothing compresses. */
  compression?: Pick<LocalCompressionDeps, 'model' | 'settings'>;
  /** Where checkpoints are kept (LOC-5); without it checkpoint.list and checkpoint.restore refuse. */
  checkpoints?: CheckpointStore;
  /** REC-7 step resume (`recovery.*`); defaults: RECOVERY_DEFAULTS. */
  recovery?: RecoverySettings;
  /** `limits.turn_timeout_s` in ms; absent: no limit. */
  turnTimeoutMs?: number;
  /**
   * Cluster mode (`cluster.enabled`, docs/cluster.md): events go through the shared stream, so
   * viewers on every instance see them under one numbering. Absent: events stay in this process.
   */
  cluster?: { store: SharedEventStore; signals: StreamSignals };
  /** In a cluster (SCL-1): which sessions this instance may run; absent: all of them. */
  ownership?: SessionOwnership;
  /**
   * In a cluster (issue 14): carries prompt answers and interrupts to the instance running the
   * session's turn. Absent: they reach the turns of this process only.
   */
  relay?: ControlRelay;
}

export class LocalSessions {
  readonly events = new TypedEmitter<LocalEvents>();
  readonly scheduler: TurnScheduler;
  private readonly hubs: SessionHubs;
  /** The shared event stream in cluster mode; null otherwise. */
  readonly clusterEvents: ClusterEvents | null;
  /** Receipts validated in this epoch (REC-1): checked before a session's first use, then cached. */
  private readonly receipts: ReceiptGate;
  /** LOC-5: api keys live only here, in the owner's daemon memory. */
  private readonly apiKeys = new Map<string, string>();
  private readonly liveAgents = new Set<string>();
  /** Access facts of sessions whose receipt was validated in this epoch (see access()). */
  private readonly checked = new Map<string, AccessRow>();

  /** prompt.submit, cancel, interrupt, resolve_unknown and prompt answers (inputs.ts). */
  readonly inputs: SessionInputs;
  /** Prompts of chat-platform turns, answered by operators (platform-prompts.ts). */
  readonly platformPrompts: PlatformPrompts;
  /** session.reset, session.undo and session.retry here (controls.ts); see `controls`. */
  private readonly transcript: SessionControls;
  /**
   * Prompt answers, interrupts, open prompts and the session controls (reset, undo, retry, compress,
   * checkpoint restore), wherever in a cluster the session runs (relayed-controls.ts).
   */
  readonly controls: RelayedControls;
  private readonly compressor: SessionCompressor;
  /** checkpoint.list and checkpoint.restore (rollback.ts); null without a checkpoint store. */
  readonly checkpoints: SessionCheckpoints | null;

  constructor(private readonly options: LocalSessionsOptions) {
    const replayCapacity = options.replayCapacity ?? 2048;
    this.hubs = new SessionHubs(options.epoch, {
      replayCapacity,
      ...(options.replayMaxBytes === undefined ? {} : { replayMaxBytes: options.replayMaxBytes }),
      coalesceMs: options.coalesceMs ?? 16,
      ...(options.cluster ? { outbox: (id, event) => this.clusterEvents!.enqueue(id, event) } : {}),
    });
    this.clusterEvents = options.cluster
      ? new ClusterEvents({
          ...options.cluster,
          epoch: options.epoch,
          hubs: this.hubs,
          maxEvents: replayCapacity,
          onError: options.onError,
        })
      : null;
    this.receipts = new ReceiptGate(options.store, options.profile, {
      paused: (logicalId, failure, detail) => {
        options.onError(
          new Error(`session ${logicalId} paused: receipt ${failure} (${detail})`),
          'receipt validation',
        );
        this.events.emit('session:paused', { logical_id: logicalId, failure, detail });
      },
    });
    this.scheduler = new TurnScheduler(
      options.store,
      options.epoch,
      new Semaphore(options.maxConcurrentTurns),
      options.turnRunner(this),
      { emit: (name, payload) => this.events.emit(name, payload) },
      options.onError,
      {
        ...(options.turnTimeoutMs === undefined ? {} : { turnTimeoutMs: options.turnTimeoutMs }),
        ...(options.ownership ? { ownership: options.ownership } : {}),
      },
    );
    this.platformPrompts = new PlatformPrompts(options.sessions);
    this.inputs = new SessionInputs({
      store: options.store,
      prompts: options.prompts,
      scheduler: this.scheduler,
      events: this.events,
      access: (principal, logicalId) => this.access(principal, logicalId),
      publish: (logicalId, event) => this.hub(logicalId).publish(event),
      ensureReceipt: (logicalId) => this.receipts.ensure(logicalId),
      titleFromFirst: (session, text) => {
        const title = titleFromMessage(text);
        return title === null ? Promise.resolve() : this.storeTitle(session.logical_id, title, true);
      },
      assertAccepting: () => this.assertAccepting(),
      fault: (point) => options.fault?.(point),
    });
    this.controls = new RelayedControls({
      relay: options.relay ?? null,
      inputs: this.inputs,
      prompts: options.prompts,
      session: {
        reset: (principal, params) => this.transcript.reset(principal, params),
        undo: (principal, params) => this.transcript.undo(principal, params),
        retry: (principal, params) => this.transcript.retry(principal, params),
        compress: (principal, params) =>
          this.compressor.compress(principal, params.session_id, params.execution_generation),
        restore: async (principal, params) => {
          if (!this.checkpoints)
            throw new GatewayError('invalid_params', 'this gateway keeps no checkpoints');
          return this.checkpoints.restore(principal, params);
        },
      },
      access: (principal, logicalId) => this.access(principal, logicalId),
      runsHere: (logicalId) => this.scheduler.running(logicalId) !== null,
      holdsLease: (logicalId) => options.ownership?.owns(logicalId) ?? true,
      onError: options.onError,
    });
    this.transcript = new SessionControls({
      store: options.store,
      scheduler: this.scheduler,
      events: this.events,
      access: (principal, logicalId) => this.access(principal, logicalId),
      receipt: (logicalId) => this.receipts.get(logicalId),
      admitReceipt: (receipt) => this.receipts.admit(receipt),
      publish: (logicalId, event) => this.hub(logicalId).publish(event),
      assertAccepting: () => this.assertAccepting(),
      now: () => new Date(),
      fault: (point) => options.fault?.(point),
    });
    this.compressor = new SessionCompressor({
      store: options.store,
      sessions: options.sessions,
      compression: options.compression,
      scheduler: this.scheduler,
      receipts: this.receipts,
      events: this.events,
      apiKey: (logicalId) => this.apiKeys.get(logicalId),
      access: (principal, logicalId) => this.access(principal, logicalId),
      publish: (logicalId, event) => this.hub(logicalId).publish(event),
      assertAccepting: () => this.assertAccepting(),
      fault: (point) => options.fault?.(point),
    });
    const store = options.checkpoints;
    this.checkpoints = store
      ? new SessionCheckpoints({
          store: options.store,
          scheduler: this.scheduler,
          prompts: options.prompts,
          checkpoints: store,
          access: (principal, logicalId) => this.access(principal, logicalId),
          receipt: (logicalId) => this.receipts.get(logicalId),
          publish: (logicalId, event) => this.hub(logicalId).publish(event),
          assertAccepting: () => this.assertAccepting(),
        })
      : null;
    this.events.on('turn:settled', (e) => {
      // Left running for the instance that takes the session over: it settles there (SCL-1).
      if (e.detail === LEASE_LOST && !e.accepted) return;
      this.hub(e.logical_id).publish({
        type: 'admission.settled',
        admission_id: e.admission_id,
        execution_generation: e.generation,
        outcome: e.outcome,
      });
    });
  }

  get epoch(): number {
    return this.options.epoch;
  }

  // ---- callbacks for the turn runner -------------------------------------------------------------

  /**
   * The session's receipt for a turn about to run, validated in this epoch first if it was not yet:
   * in a cluster the instance that runs a turn need not be the one that admitted it (SCL-1).
   */
  async receiptForTurn(logicalId: string): Promise<CreationReceipt | null> {
    if (!(await this.receipts.ensure(logicalId))) return null;
    return this.receipts.get(logicalId) ?? null;
  }

  validatedReceipt(logicalId: string): CreationReceipt | null {
    return this.receipts.get(logicalId) ?? null;
  }

  apiKeyOf(logicalId: string): string | undefined {
    return this.apiKeys.get(logicalId);
  }

  /** The sessions whose api_key (LOC-5) this instance holds in memory. */
  keyedSessions(): Iterable<string> {
    return this.apiKeys.keys();
  }

  publish(logicalId: string, event: PublicEvent): void {
    this.hub(logicalId).publish(event);
  }

  agentStarted(logicalId: string): void {
    this.liveAgents.add(logicalId);
  }

  /** Compresses a session whose turn slot the caller holds (a running turn's context budget). */
  compressInSlot(
    logicalId: string,
    reason: CompressionReason,
    signal?: AbortSignal,
  ): Promise<CompressOutcome> {
    return this.compressor.inSlot(logicalId, reason, signal);
  }

  // ---- recovery ------------------------------------------------------------------------------------

  /**
   * Cold start (REC-1, REC-2, REC-7): each admission that was running in an older epoch resumes at
   * its last durable step under a new generation, or becomes `unknown` with the reason
   * (decideRecovery); sessions with queued work get their receipts validated and their queues
   * started. Cost follows what is queued, not the stored history: other sessions are validated on
   * first use.
   */
  async recover(): Promise<LocalEvents['recovery:done']> {
    const { store, epoch } = this.options;
    const { unknown, resumed } = await recoverOrphans(
      store,
      epoch,
      this.options.recovery ?? RECOVERY_DEFAULTS,
      Date.now(),
      (logicalId) => this.receipts.ensure(logicalId),
    );
    const queued = await store.sessionsWithQueued();
    const paused: string[] = [];
    const ready: string[] = [];
    for (const logicalId of queued) {
      if (await this.receipts.ensure(logicalId)) ready.push(logicalId);
      else paused.push(logicalId);
    }
    // Turns start only once everything is read, after the last await: nothing of recovery runs
    // beside them, and the caller (the daemon's start) goes on in this same tick.
    for (const claimed of resumed) this.scheduler.resume(claimed);
    for (const logicalId of ready) this.scheduler.kick(logicalId);
    const done = {
      epoch,
      unknown,
      resumed: resumed.map((c) => c.admission.admission_id),
      queued_sessions: queued.length,
      paused,
    };
    this.events.emit('recovery:done', done);
    return done;
  }

  /**
   * SCL-1: a session whose lease this instance just took recovers exactly as at a cold start (its
   * started turn resumes or becomes `unknown`, REC-7; its queue runs), scoped to that session. What
   * this instance kept of it in memory is dropped first: another instance may have changed it.
   */
  async recoverSession(logicalId: string): Promise<LocalEvents['session:taken']> {
    const { store, epoch } = this.options;
    this.receipts.forget(logicalId);
    this.checked.delete(logicalId);
    const { unknown, resumed } = await recoverOrphans(
      store,
      epoch,
      this.options.recovery ?? RECOVERY_DEFAULTS,
      Date.now(),
      (id) => this.receipts.ensure(id),
      logicalId,
    );
    const ready = await this.receipts.ensure(logicalId);
    const taken = {
      logical_id: logicalId,
      unknown,
      resumed: resumed.map((c) => c.admission.admission_id),
    };
    this.events.emit('session:taken', taken);
    for (const claimed of resumed) this.scheduler.resume(claimed);
    if (ready) this.scheduler.kick(logicalId);
    return taken;
  }

  // ---- creation ------------------------------------------------------------------------------------

  /** session.create (creation.ts): a new session, or the one this request_id (or title) made. */
  async create(principal: Principal, params: CreateSessionParams): Promise<Record<string, unknown>> {
    this.assertAccepting();
    const session = await createLocalSession(
      {
        store: this.options.store,
        receipts: this.receipts,
        apiKeys: this.apiKeys,
        events: this.events,
        launchDefaults: this.options.launchDefaults,
        launchLookups: this.options.launchLookups,
      },
      principal,
      params,
    );
    // In a cluster the key lives only here, so its turns must run here: take the session's lease now,
    // before the answer, so work admitted on any other instance wakes this one (docs/cluster.md).
    if (params.api_key !== undefined) await this.options.ownership?.acquire(session.logical_id);
    return this.snapshotOf(session, []);
  }

  // ---- viewers -------------------------------------------------------------------------------------

  /**
   * With `messageLimit` the snapshot carries only the newest messages (and `messages_truncated`);
   * older ones are read with session.messages, so a long session opens by its last page.
   */
  async resume(
    principal: Principal,
    viewer: Viewer,
    logicalId: string,
    messageLimit?: number,
  ): Promise<Record<string, unknown>> {
    const session = await this.access(principal, logicalId);
    const hub = this.clusterEvents ? await this.clusterEvents.follow(logicalId) : this.hub(logicalId);
    hub.attach(viewer);
    return this.snapshot(session, messageLimit);
  }

  async detach(principal: Principal, viewerId: string, logicalId: string): Promise<{ detached: boolean }> {
    await this.access(principal, logicalId);
    return { detached: this.hubs.find(logicalId)?.detach(viewerId) ?? false };
  }

  /** A connection closed: it leaves every session; executions and prompts stay (LOC-7). */
  viewerGone(viewerId: string): void {
    for (const hub of this.hubs.all()) hub.detach(viewerId);
  }

  /**
   * The transcript is read asynchronously while a turn may go on publishing: a message stored and
   * announced during the read could be counted in `last_seq` yet missing from `messages`, and
   * then lost to the viewer. So the read is repeated until no event was published during it.
   */
  async snapshot(session: AccessRow, messageLimit?: number): Promise<Record<string, unknown>> {
    const receipt = this.receipts.get(session.logical_id);
    if (!receipt) return await this.snapshotOf(session, []);
    const hub = await this.followed(session.logical_id);
    if (this.clusterEvents) {
      // What this instance published is committed and shown before the transcript is read, so a
      // message it already stored is not announced again after the snapshot.
      hub.flush();
      await this.clusterEvents.flush(Date.now() + SETTLE_MS);
      await this.clusterEvents.follow(session.logical_id);
    }
    for (let attempt = 1; ; attempt++) {
      const before = hub.lastSeq;
      // The row and the admissions are read before the transcript: a settlement committed between
      // the reads then shows its messages with the admission still pending (read again by a
      // viewer that waits), never settled without its final answer.
      const state = await this.readState(session.logical_id);
      const physicalId =
        this.receipts.get(session.logical_id)?.current_session_id ?? receipt.current_session_id;
      const page =
        messageLimit === undefined
          ? { messages: await this.options.sessions.loadTranscript(physicalId), hasMore: false }
          : await this.options.sessions.loadTranscriptPage(physicalId, { limit: messageLimit });
      if (hub.lastSeq !== before && attempt < SNAPSHOT_READS) continue;
      // Still moving after the last read: a message shown twice is better than one lost.
      const snapshot = await this.snapshotOf(session, page.messages, before, state);
      return messageLimit === undefined ? snapshot : { ...snapshot, messages_truncated: page.hasMore };
    }
  }

  /** The session's row (its current execution generation) and its unsettled admissions. */
  private async readState(id: string): Promise<{ fresh: LocalSessionRow; unsettled: AdmissionRow[] }> {
    const fresh = await this.options.store.getLocalSession(id);
    if (!fresh) throw new GatewayError('not_found', `no session ${id}`, { session_id: id });
    return { fresh, unsettled: await this.options.store.unsettled(id) };
  }

  private async snapshotOf(
    session: AccessRow,
    messages: StoredMessage[],
    lastSeq?: number,
    state?: { fresh: LocalSessionRow; unsettled: AdmissionRow[] },
  ): Promise<Record<string, unknown>> {
    const id = session.logical_id;
    const hub = await this.followed(id);
    const { fresh, unsettled } = state ?? (await this.readState(id));
    return sessionSnapshot({
      session: fresh,
      messages,
      unsettled,
      running: this.scheduler.running(id),
      prompts: await this.controls.pendingPrompts(id),
      // The stream's epoch in cluster mode (the same on every instance); this epoch otherwise.
      epoch: hub.epoch,
      lastSeq: lastSeq ?? hub.lastSeq,
      info: this.infoOf(fresh),
    });
  }

  /** session.title: the owner (or an operator) names the session. */
  async retitle(principal: Principal, logicalId: string, title: string): Promise<Record<string, unknown>> {
    await this.access(principal, logicalId);
    await this.storeTitle(logicalId, title, false);
    return { session_id: logicalId, title };
  }

  /** Stores a title and keeps this epoch's access facts (which info reads) in step with it. */
  private async storeTitle(logicalId: string, title: string, onlyIfUntitled: boolean): Promise<void> {
    if (!(await this.options.store.setTitle(logicalId, title, onlyIfUntitled))) return;
    const known = this.checked.get(logicalId);
    if (known) this.checked.set(logicalId, { ...known, title });
  }

  /** session.history: the whole lineage, or what the model sees (history.ts). */
  async history(
    principal: Principal,
    logicalId: string,
    view: 'full' | 'model',
  ): Promise<Record<string, unknown>> {
    await this.access(principal, logicalId);
    const receipt = this.receipts.get(logicalId);
    if (!receipt)
      throw new GatewayError('permission_denied', `session ${logicalId} is paused: its receipt is invalid`);
    return sessionHistory(this.options.sessions, receipt, view);
  }

  async info(principal: Principal, logicalId: string): Promise<Record<string, unknown>> {
    return this.infoOf(await this.access(principal, logicalId));
  }

  private infoOf(session: AccessRow): Record<string, unknown> {
    const policy = this.receipts.get(session.logical_id)?.policy;
    const id = session.logical_id;
    const live = this.options.agents?.has(id) ?? this.liveAgents.has(id);
    return sessionInfo(session, policy, live || this.scheduler.running(id) !== null);
  }

  async list(
    principal: Principal,
    options: { limit: number; scope: 'live' | 'stored' },
  ): Promise<Record<string, unknown>> {
    // Hidden rows (tool and oneshot sources, or hidden: true) never reach a human picker.
    const rows =
      options.scope === 'live'
        ? (
            await Promise.all(
              [...new Set([...this.hubs.ids(), ...(this.options.agents?.keys() ?? [])])].map((id) =>
                this.options.store.getLocalSession(id),
              ),
            )
          ).filter((row): row is LocalSessionRow => row !== null && !row.hidden)
        : await this.options.store.listLocalSessions({ limit: options.limit * 4 });
    const visible = rows.filter((row) => mayAccess(principal, row)).slice(0, options.limit);
    const sessions = await Promise.all(
      visible.map(async (row) => ({ ...this.infoOf(row), state: await this.stateOf(row) })),
    );
    return { scope: options.scope, sessions };
  }

  /** session.list with scope "all": local and chat-platform sessions by recent activity (listing.ts). */
  listAll(principal: Principal, options: { limit: number; cursor: string | null }) {
    return listAll(this.listing(), principal, options);
  }

  /** session.messages: one page of a transcript, newest page first (listing.ts). */
  messages(principal: Principal, options: { session_id: string; before_id: number | null; limit: number }) {
    return sessionMessages(this.listing(), principal, options);
  }

  private listing(): ListingFacts {
    return {
      sessions: this.options.sessions,
      store: this.options.store,
      local: async (row) => ({ info: this.infoOf(row), state: await this.stateOf(row) }),
      platformPrompts: (sessionId) => this.platformPrompts.pending(sessionId),
      currentTranscript: async (principal, logicalId) => {
        await this.access(principal, logicalId);
        return this.receipts.get(logicalId)?.current_session_id ?? null;
      },
    };
  }

  /** approval.respond: a local session's prompt, or (for operators) a chat-platform turn's. */
  async respondApproval(principal: Principal, params: ApprovalResponse): Promise<Record<string, unknown>> {
    if (await this.isPlatformAnswer(principal, params.session_id))
      return this.platformPrompts.respondApproval(principal, params);
    return this.controls.respondApproval(principal, params);
  }

  /** session.interrupt (LOC-12): the running turn, wherever in the cluster it runs. */
  interrupt(principal: Principal, logicalId: string, generation: number): Promise<Record<string, unknown>> {
    return this.controls.interrupt(principal, logicalId, generation);
  }

  /** The owner's side of the relay (issue 14): a call relayed by another instance. */
  runRelayed(
    kind: RelayedKind,
    principal: Principal | null,
    params: Record<string, unknown>,
  ): Promise<unknown> {
    return this.controls.run(kind, principal, params);
  }

  /** Not a local session, asked by a principal not bound to named sessions (those are fenced). */
  private async isPlatformAnswer(principal: Principal, sessionId: string): Promise<boolean> {
    return principal.sessions === undefined && (await this.options.store.getLocalSession(sessionId)) === null;
  }

  /** clarify.respond, likewise. */
  async respondClarify(principal: Principal, params: ClarifyResponse): Promise<Record<string, unknown>> {
    if (await this.isPlatformAnswer(principal, params.session_id))
      return this.platformPrompts.respondClarify(principal, params);
    return this.controls.respondClarify(principal, params);
  }

  /** session.search: full-text search over the sessions the caller may open (search.ts). */
  search(principal: Principal, options: { query: string; limit: number; syntax: 'plain' | 'fts' }) {
    return searchVisible(this.options.sessions, this.options.store, principal, options);
  }

  private async stateOf(row: LocalSessionRow): Promise<SessionState> {
    const id = row.logical_id;
    const unsettled = await this.options.store.unsettled(id);
    return sessionState(row, this.scheduler.running(id), unsettled);
  }

  async eventsSince(principal: Principal, logicalId: string, epoch: number, afterSeq: number) {
    await this.access(principal, logicalId);
    const cluster = this.clusterEvents;
    if (!cluster) return eventsSince(this.hub(logicalId), logicalId, epoch, afterSeq, this.options.epoch);
    const replay = await cluster.since(logicalId, epoch, afterSeq);
    return replayReply(replay, logicalId, this.hub(logicalId).epoch);
  }

  // ---- plumbing ------------------------------------------------------------------------------------

  private assertAccepting(): void {
    if (!this.options.accepting()) {
      throw new GatewayError(
        'runtime_draining',
        'the gateway is shutting down and takes no new input; retry after it restarts',
      );
    }
  }

  /**
   * The session if the principal may use it, with its receipt validated (or a clear refusal). After
   * the first check of the epoch its access facts cannot change, so they are kept and the store is
   * not read again on the hot path (every prompt.submit passes here).
   */
  private async access(principal: Principal, logicalId: string): Promise<AccessRow> {
    // In a cluster the receipt changes only under the session's lease (SCL-1): one validated here
    // is current while this instance holds it, and is checked against the store otherwise.
    const ownership = this.options.ownership;
    if (ownership && !ownership.owns(logicalId) && (await this.receipts.refresh(logicalId)))
      this.checked.delete(logicalId);
    const known = this.checked.get(logicalId);
    if (known) return requireAccess(principal, known, logicalId);
    const session = requireAccess(principal, await this.options.store.getLocalSession(logicalId), logicalId);
    // The first use in this epoch validates the receipt, which may pause or unpause the row.
    const valid = await this.receipts.ensure(logicalId);
    const fresh = (await this.options.store.getLocalSession(logicalId)) ?? session;
    if (valid) this.checked.set(logicalId, accessFacts(fresh));
    return fresh;
  }

  private hub(logicalId: string): SessionHub {
    return this.hubs.of(logicalId);
  }

  /** The session's hub; in cluster mode synced with the shared stream first. */
  private followed(logicalId: string): Promise<SessionHub> {
    return this.clusterEvents?.follow(logicalId) ?? Promise.resolve(this.hub(logicalId));
  }

  /**
   * Housekeeping: releases the in-memory state of sessions nobody views and nothing runs — their
   * hub (with its replay buffer) and their cached access facts. Both are rebuilt on demand; the
   * hub's numbering goes on where it stopped. Returns how many sessions were released.
   */
  releaseIdle(): number {
    const released = this.hubs.releaseIdle(
      (id) => !this.scheduler.busy(id) && this.options.prompts.pendingPrompts(id).length === 0,
    );
    for (const id of released) {
      this.checked.delete(id);
      this.liveAgents.delete(id);
    }
    this.clusterEvents?.released(released);
    return released.length;
  }

  /** Sessions with a hub in memory now (tests, runtime.describe). */
  get hubCount(): number {
    return this.hubs.size;
  }

  async drain(deadline: number): Promise<string[]> {
    for (const hub of this.hubs.all()) hub.flush();
    const left = await this.scheduler.drain(deadline);
    // What the drained turns published reaches the shared stream before the store closes.
    for (const hub of this.hubs.all()) hub.flush();
    await this.clusterEvents?.flush(deadline);
    return left;
  }
}
