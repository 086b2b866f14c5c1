/**
 * Gateway-owned local sessions (SPEC LOC-1..12, AUTH-4/5, REC-1..3): the one object the surfaces
 * (the RPC methods) call. It builds the engine's parts and wires them to each other — the receipt
 * gate, the access cache, the scheduler, the event fan-out, inputs, controls, compression,
 * checkpoints, snapshots — and routes each call to the part that owns it. It knows nothing of
 * sockets or SQL.
 */
import type { ApprovalResponse, ClarifyResponse } from '../../runtime/approvals/broker.js';
import type { CompressionReason, CompressOutcome } from '../../runtime/context/budget.js';
import type { McpServersConfig } from '../../runtime/mcp/config.js';
import type { SessionMcpServers } from '../../runtime/mcp/pool.js';
import type { ChatModel } from '../../runtime/model/client.js';
import { conversationOwner } from '../auth/chat-members.js';
import type { Capability, Principal } from '../auth/principal.js';
import type { RelayedKind } from '../cluster/relay.js';
import { Semaphore } from '../concurrency/semaphore.js';
import { GatewayError } from '../errors.js';
import { TypedEmitter } from '../events/typed-emitter.js';
import type { AuditDraft } from '../ports/access-store.js';
import type { AdmissionRow } from '../ports/local-store.js';
import { claimMayBeLazy, RECOVERY_DEFAULTS } from '../session/step-resume.js';
import { AccessCache } from './access-cache.js';
import { ownerOf, type AccessRow } from './access.js';
import type { ClusterEvents } from './cluster-events.js';
import { SessionCompressor } from './compress-control.js';
import { SessionControls } from './controls.js';
import { createLocalSession } from './creation.js';
import type { LocalEvents } from './events.js';
import { EventFanOut } from './fan-out.js';
import { SessionFence } from './fence.js';
import type { PublicEvent, Viewer } from './hub.js';
import { SessionInputs } from './inputs.js';
import type { CreateSessionParams } from './launch-params.js';
import type { ListingFacts } from './listing.js';
import { SessionManagement, type ForkParams } from './manage.js';
import type { LocalSessionsOptions, TurnRunnerHost } from './options.js';
import { PlatformPrompts } from './platform-prompts.js';
import { SessionReads } from './reads.js';
import type { CreationReceipt } from './receipt.js';
import { ReceiptGate } from './receipt-gate.js';
import { recoverAll, recoverTaken, type RecoveryContext } from './recovery.js';
import { RelayedControls } from './relayed-controls.js';
import { SessionCheckpoints } from './rollback.js';
import { TurnScheduler } from './scheduler.js';
import { SessionSecrets } from './secrets.js';
import { SessionSharing } from './sharing.js';
import { SessionSnapshots } from './snapshots.js';
import type { ReplyOptions } from './whole-transcript.js';
import { SessionSpend } from './spend.js';

export class LocalSessions implements TurnRunnerHost {
  readonly events = new TypedEmitter<LocalEvents>();
  readonly scheduler: TurnScheduler;
  /** Hubs and, in cluster mode, the shared stream (fan-out.ts). */
  private readonly fanOut: EventFanOut;
  /** The shared event stream in cluster mode; null otherwise. */
  readonly clusterEvents: ClusterEvents | null;
  /** Receipts validated in this epoch (REC-1): checked before a session's first use, then cached. */
  private readonly receipts: ReceiptGate;
  /** Who may use a session, checked on every call (access-cache.ts). */
  private readonly accessCache: AccessCache;
  /** LOC-5: api keys and the own MCP servers' values, only here, never stored (secrets.ts). */
  private readonly secrets: SessionSecrets;
  /** Who may reach a session, and the member rules that go with it (fence.ts). */
  private readonly fence: SessionFence;
  private readonly liveAgents = new Set<string>();
  /** session info, state and the resume snapshot (snapshots.ts). */
  private readonly snapshots: SessionSnapshots;

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
  /** session.share, session.unshare, session.shares (sharing.ts); null without an access store. */
  readonly sharing: SessionSharing | null;
  /** session.fork, session.archive, session.delete and session.lineage (manage.ts). */
  private readonly manage: SessionManagement;
  /** session.cost, cost.summary and the budget's controls (spend.ts). */
  readonly spend: SessionSpend;
  /** session.list, .messages, .search, .history, .context and .turns (reads.ts). */
  readonly reads: SessionReads;

  constructor(private readonly options: LocalSessionsOptions) {
    this.fanOut = new EventFanOut({
      epoch: options.epoch,
      replayCapacity: options.replayCapacity ?? 2048,
      ...(options.replayMaxBytes === undefined ? {} : { replayMaxBytes: options.replayMaxBytes }),
      coalesceMs: options.coalesceMs ?? 16,
      ...(options.cluster ? { cluster: options.cluster } : {}),
      onError: options.onError,
    });
    this.clusterEvents = this.fanOut.cluster;
    this.receipts = new ReceiptGate(options.store, options.profile, {
      paused: (logicalId, failure, detail) => {
        options.onError(
          new Error(`session ${logicalId} paused: receipt ${failure} (${detail})`),
          'receipt validation',
        );
        this.events.emit('session:paused', { logical_id: logicalId, failure, detail });
      },
    });
    this.accessCache = new AccessCache(
      options.store,
      this.receipts,
      options.ownership,
      options.shares ?? null,
    );
    this.scheduler = new TurnScheduler(
      options.store,
      options.epoch,
      options.turnPermits ?? new Semaphore(options.maxConcurrentTurns),
      options.turnRunner(this),
      { emit: (name, payload) => this.events.emit(name, payload) },
      options.onError,
      {
        ...(options.turnTimeoutMs === undefined ? {} : { turnTimeoutMs: options.turnTimeoutMs }),
        ...(options.ownership ? { ownership: options.ownership } : {}),
        ...(options.tracer ? { tracer: options.tracer } : {}),
        lazyClaims: claimMayBeLazy(options.recovery ?? RECOVERY_DEFAULTS),
      },
    );
    const access = (principal: Principal, logicalId: string) => this.access(principal, logicalId);
    this.secrets = new SessionSecrets({
      ...(options.mcpValueLimits ? { limits: options.mcpValueLimits } : {}),
      access,
      receipt: (logicalId) => this.receiptForTurn(logicalId),
      assertAccepting: () => this.assertAccepting(),
      ...(options.ownership ? { ownership: options.ownership } : {}),
    });
    this.fence = new SessionFence({
      store: options.store,
      sessions: options.sessions,
      accessCache: this.accessCache,
      receipts: this.receipts,
      ...(options.chatMembers ? { chatMembers: options.chatMembers } : {}),
      ...(options.memberLimits ? { memberLimits: options.memberLimits } : {}),
    });
    const publish = (logicalId: string, event: PublicEvent) => this.fanOut.publish(logicalId, event);
    const assertAccepting = () => this.assertAccepting();
    this.spend = new SessionSpend({
      sessions: options.sessions,
      ...(options.budget ? { budget: options.budget } : {}),
      access,
      receipt: (logicalId) => this.receiptForTurn(logicalId),
    });
    this.platformPrompts = new PlatformPrompts(options.sessions);
    this.inputs = new SessionInputs({
      store: options.store,
      prompts: options.prompts,
      scheduler: this.scheduler,
      events: this.events,
      access,
      publish,
      ensureReceipt: (logicalId) => this.receipts.ensure(logicalId),
      titled: (logicalId, title) => this.accessCache.retitled(logicalId, title),
      refuseWhileBudgetHeld: (principal, logicalId, text) =>
        this.spend.refuseWhileHeld(principal, logicalId, text),
      assertAccepting,
      fault: (point) => options.fault?.(point),
    });
    this.controls = new RelayedControls({
      relay: options.relay ?? null,
      inputs: this.inputs,
      prompts: options.prompts,
      session: {
        reset: (principal, params, audit) => this.transcript.reset(principal, params, audit),
        undo: (principal, params) => this.transcript.undo(principal, params),
        retry: (principal, params) => this.transcript.retry(principal, params),
        model: async (principal, params) => {
          this.fence.limitModel(principal, params);
          return this.transcript.model(principal, params);
        },
        compress: (principal, params) =>
          this.compressor.compress(principal, params.session_id, params.execution_generation),
        restore: async (principal, params) => {
          if (!this.checkpoints)
            throw new GatewayError('invalid_params', 'this gateway keeps no checkpoints');
          return this.checkpoints.restore(principal, params);
        },
      },
      access,
      runsHere: (logicalId) => this.scheduler.running(logicalId) !== null,
      holdsLease: (logicalId) => options.ownership?.owns(logicalId) ?? true,
      onError: options.onError,
    });
    this.transcript = new SessionControls({
      store: options.store,
      scheduler: this.scheduler,
      events: this.events,
      access,
      receipt: (logicalId) => this.receipts.get(logicalId),
      admitReceipt: (receipt) => this.receipts.admit(receipt),
      publish,
      assertAccepting,
      now: () => new Date(),
      fault: (point) => options.fault?.(point),
      providers: options.launchDefaults.providers,
      forgetApiKey: (logicalId) => this.secrets.apiKeys.delete(logicalId),
    });
    this.compressor = new SessionCompressor({
      store: options.store,
      sessions: options.sessions,
      compression: options.compression,
      ...(options.budget ? { budget: options.budget } : {}),
      scheduler: this.scheduler,
      receipts: this.receipts,
      events: this.events,
      apiKey: (logicalId) => this.secrets.apiKey(logicalId),
      access,
      publish,
      assertAccepting,
      fault: (point) => options.fault?.(point),
    });
    const store = options.checkpoints;
    this.checkpoints = store
      ? new SessionCheckpoints({
          store: options.store,
          scheduler: this.scheduler,
          prompts: options.prompts,
          checkpoints: store,
          access,
          receipt: (logicalId) => this.receipts.get(logicalId),
          publish,
          assertAccepting,
        })
      : null;
    this.sharing = options.shares
      ? new SessionSharing({
          store: options.store,
          access: options.shares,
          profile: options.profile,
          detachWhere: (logicalId, gone) => this.fanOut.detachWhere(logicalId, gone),
          publish,
          now: () => new Date(),
        })
      : null;
    this.snapshots = new SessionSnapshots({
      store: options.store,
      sessions: options.sessions,
      receipts: this.receipts,
      scheduler: this.scheduler,
      fanOut: this.fanOut,
      pendingPrompts: (logicalId) => this.controls.pendingPrompts(logicalId),
      agentLive: (logicalId) => options.agents?.has(logicalId) ?? this.liveAgents.has(logicalId),
    });
    this.reads = new SessionReads({
      store: options.store,
      sessions: options.sessions,
      access,
      receipt: (logicalId) => this.receipts.get(logicalId),
      ensuredReceipt: (logicalId) => this.receiptForTurn(logicalId),
      sharedWith: (principal) => this.accessCache.sharedWith(principal),
      compression: options.compression,
      requestShape: options.requestShape,
      listing: this.listingFacts(),
    });
    this.manage = new SessionManagement({
      store: options.store,
      sessions: options.sessions,
      scheduler: this.scheduler,
      events: this.events,
      access,
      receipt: (logicalId) => this.receipts.get(logicalId),
      admitReceipt: (receipt) => this.receipts.admit(receipt),
      apiKey: (logicalId) => this.secrets.apiKey(logicalId),
      setApiKey: (logicalId, key) => this.secrets.apiKeys.set(logicalId, key),
      copyMcpValues: (from, to, servers) => this.secrets.mcpValues.copy(from, to, servers),
      forgetMcpValues: (logicalId) => this.secrets.mcpValues.forget(logicalId),
      publish,
      changed: (logicalId) => this.accessCache.forget(logicalId),
      forget: (logicalId) => {
        this.accessCache.forget(logicalId);
        this.receipts.forget(logicalId);
        this.secrets.forget(logicalId);
        this.liveAgents.delete(logicalId);
      },
      assertAccepting,
      now: () => new Date(),
    });
    this.fanOut.announceSettlements(this.events);
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
    return this.secrets.apiKey(logicalId);
  }

  mcpServersOf(logicalId: string, servers: SessionMcpServers): SessionMcpServers {
    return this.secrets.mcpServersOf(logicalId, servers);
  }

  /** session.mcp.supply (secrets.ts). */
  supplyMcp(
    principal: Principal,
    params: { session_id: string; mcp_servers: McpServersConfig },
  ): Promise<Record<string, unknown>> {
    return this.secrets.supply(principal, params);
  }

  /** The sessions whose api_key (LOC-5) this instance holds in memory. */
  keyedSessions(): Iterable<string> {
    return this.secrets.keyedSessions();
  }

  publish(logicalId: string, event: PublicEvent): void {
    this.fanOut.publish(logicalId, event);
  }

  agentStarted(logicalId: string): void {
    this.liveAgents.add(logicalId);
  }

  /**
   * Compresses a session whose turn slot the caller holds (a running turn's context budget), the
   * summary written by `model` (the turn's own, budget-guarded) where one is given.
   */
  compressInSlot(
    logicalId: string,
    reason: CompressionReason,
    signal?: AbortSignal,
    model?: ChatModel,
  ): Promise<CompressOutcome> {
    return this.compressor.inSlot(logicalId, reason, signal, model);
  }

  // ---- recovery (recovery.ts) ----------------------------------------------------------------------

  /** Cold start (REC-1, REC-2, REC-7): started turns resume or become `unknown`; queues start. */
  recover(): Promise<LocalEvents['recovery:done']> {
    return recoverAll(this.recovery());
  }

  /**
   * SCL-1: a session whose lease this instance just took recovers exactly as at a cold start, after
   * what this instance kept of it in memory is dropped: another instance may have changed it.
   */
  recoverSession(logicalId: string): Promise<LocalEvents['session:taken']> {
    this.receipts.forget(logicalId);
    this.accessCache.forget(logicalId);
    return recoverTaken(this.recovery(), logicalId);
  }

  private recovery(): RecoveryContext {
    return {
      store: this.options.store,
      epoch: this.options.epoch,
      settings: this.options.recovery ?? RECOVERY_DEFAULTS,
      receipts: this.receipts,
      scheduler: this.scheduler,
      events: this.events,
      ...(this.options.tracer ? { tracer: this.options.tracer } : {}),
    };
  }

  // ---- creation ------------------------------------------------------------------------------------

  /** session.create (creation.ts): a new session, or the one this request_id (or title) made. */
  async create(
    principal: Principal,
    params: CreateSessionParams,
    /** The call's audit row, committed with the session (issue 30). */
    audit?: AuditDraft,
    /** How the session gets its own MCP servers' values when not from `params` (creation.ts). */
    values?: { inheritFrom: string } | { none: true },
  ): Promise<Record<string, unknown>> {
    this.assertAccepting();
    const session = await createLocalSession(
      {
        store: this.options.store,
        receipts: this.receipts,
        apiKeys: this.secrets.apiKeys,
        mcpValues: this.secrets.mcpValues,
        events: this.events,
        launchDefaults: this.options.launchDefaults,
        launchLookups: this.options.launchLookups,
        memberLimits: this.options.memberLimits,
      },
      principal,
      params,
      audit,
      values === undefined
        ? undefined
        : 'inheritFrom' in values
          ? (this.secrets.mcpValues.get(values.inheritFrom) ?? {})
          : {},
    );
    // In a cluster the key lives only here, so its turns must run here: take the session's lease now,
    // before the answer, so work admitted on any other instance wakes this one (docs/cluster.md).
    // So do the own MCP servers' values (mcp-values.ts).
    if (params.api_key !== undefined || this.secrets.mcpValues.get(session.logical_id) !== undefined)
      await this.options.ownership?.acquire(session.logical_id);
    return this.snapshots.of(session, []);
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
    options: ReplyOptions = {},
  ): Promise<Record<string, unknown>> {
    const session = await this.access(principal, logicalId);
    const cluster = this.fanOut.cluster;
    const hub = cluster ? await cluster.follow(logicalId) : this.fanOut.hub(logicalId);
    hub.attach(viewer);
    // Consistent with the live event stream the viewer now follows (snapshots.ts).
    return this.snapshots.snapshot(session, messageLimit, options);
  }

  /**
   * A viewer follows the session's live events without a snapshot: a surface that only needs what
   * happens from now on (the OpenAI-compatible endpoint waiting for its turn).
   */
  async follow(principal: Principal, viewer: Viewer, logicalId: string): Promise<void> {
    await this.access(principal, logicalId);
    const cluster = this.fanOut.cluster;
    const hub = cluster ? await cluster.follow(logicalId) : this.fanOut.hub(logicalId);
    hub.attach(viewer);
  }

  /**
   * Binds an API client's request key (its Idempotency-Key, hashed) to the first request made with
   * it, per principal: the same key with another request, or for another session, is
   * `admission_conflict`, before anything is admitted (docs/integrations.md).
   */
  async claimRequestKey(
    principal: Principal,
    key: { key_hash: string; digest: string; logical_id: string },
  ): Promise<void> {
    this.assertAccepting();
    const result = await this.options.store.claimRequestKey({
      owner: ownerOf(principal),
      profile: principal.profile,
      ...key,
      at: new Date().toISOString(),
    });
    if (result.kind === 'existing' && (result.digest !== key.digest || result.logical_id !== key.logical_id))
      throw new GatewayError(
        'admission_conflict',
        'this request key was already used with a different request',
        {
          session_id: result.logical_id,
        },
      );
  }

  /** One admission of a session the principal may use, as stored; null when it has none by that id. */
  async admission(
    principal: Principal,
    logicalId: string,
    admissionId: string,
  ): Promise<AdmissionRow | null> {
    await this.access(principal, logicalId);
    const admission = await this.options.store.getAdmission(admissionId);
    return admission?.logical_id === logicalId ? admission : null;
  }

  async detach(principal: Principal, viewerId: string, logicalId: string): Promise<{ detached: boolean }> {
    await this.access(principal, logicalId);
    return { detached: this.fanOut.detach(viewerId, logicalId) };
  }

  /** A connection closed: it leaves every session; executions and prompts stay (LOC-7). */
  viewerGone(viewerId: string): void {
    this.fanOut.viewerGone(viewerId);
  }

  /** session.title: the owner (or an operator) names the session. */
  async retitle(principal: Principal, logicalId: string, title: string): Promise<Record<string, unknown>> {
    await this.access(principal, logicalId);
    await this.storeTitle(logicalId, title);
    return { session_id: logicalId, title };
  }

  /** session.fork (manage.ts): a new session with the source's history up to one message. */
  async fork(principal: Principal, params: ForkParams): Promise<Record<string, unknown>> {
    const session = await this.manage.fork(principal, params);
    const snapshot = await this.snapshots.snapshot(await this.access(principal, session.logical_id), 100);
    return { ...snapshot, forked_from: session.forked_from };
  }

  /** session.archive (manage.ts): out of the default lists, or back in. */
  archive(principal: Principal, params: { session_id: string; archived: boolean }) {
    return this.manage.archive(principal, params);
  }

  /** session.delete (manage.ts): the session and everything stored for it. */
  delete(principal: Principal, params: { session_id: string }) {
    return this.manage.delete(principal, params);
  }

  /** session.lineage (manage.ts): the fork source and the forks of a session. */
  lineage(principal: Principal, logicalId: string) {
    return this.manage.lineage(principal, logicalId);
  }

  /** Stores a title and keeps this epoch's access facts (which info reads) in step with it. */
  private async storeTitle(logicalId: string, title: string): Promise<void> {
    if (!(await this.options.store.setTitle(logicalId, title, false))) return;
    this.accessCache.retitled(logicalId, title);
  }

  async info(principal: Principal, logicalId: string): Promise<Record<string, unknown>> {
    return this.snapshots.info(await this.access(principal, logicalId));
  }

  private listingFacts(): ListingFacts {
    return {
      sessions: this.options.sessions,
      store: this.options.store,
      liveIds: () => [...this.fanOut.ids(), ...(this.options.agents?.keys() ?? [])],
      local: async (row) => ({ info: this.snapshots.info(row), state: await this.snapshots.state(row) }),
      platformPrompts: (sessionId) => this.platformPrompts.pending(sessionId),
      sharedWith: (principal) => this.accessCache.sharedWith(principal),
      chatOwner: (entry) => {
        const members = this.options.chatMembers;
        return members === undefined ? null : conversationOwner(entry, members);
      },
      currentTranscript: async (principal, logicalId) => {
        await this.access(principal, logicalId);
        return this.receipts.get(logicalId)?.current_session_id ?? null;
      },
    };
  }

  /** approval.respond: a local session's prompt, or (for operators) a chat-platform turn's. */
  async respondApproval(principal: Principal, params: ApprovalResponse): Promise<Record<string, unknown>> {
    if (await this.fence.isPlatformAnswer(principal, params.session_id))
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

  /** clarify.respond, likewise. */
  async respondClarify(principal: Principal, params: ClarifyResponse): Promise<Record<string, unknown>> {
    if (await this.fence.isPlatformAnswer(principal, params.session_id))
      return this.platformPrompts.respondClarify(principal, params);
    return this.controls.respondClarify(principal, params);
  }

  async eventsSince(principal: Principal, logicalId: string, epoch: number, afterSeq: number) {
    await this.access(principal, logicalId);
    return this.fanOut.eventsSince(logicalId, epoch, afterSeq);
  }

  /** The per-session fence every method naming a session passes before its handler (fence.ts). */
  authorize(principal: Principal, logicalId: string, capability: Capability): Promise<void> {
    return this.fence.authorize(principal, logicalId, capability);
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

  /** The session if the principal may use it, with its receipt validated (access-cache.ts). */
  private access(principal: Principal, logicalId: string): Promise<AccessRow> {
    return this.accessCache.access(principal, logicalId);
  }

  /**
   * Housekeeping: releases the in-memory state of sessions nobody views and nothing runs — their
   * hub (with its replay buffer) and their cached access facts. Both are rebuilt on demand; the
   * hub's numbering goes on where it stopped. Returns how many sessions were released.
   */
  releaseIdle(): number {
    const released = this.fanOut.releaseIdle(
      (id) => !this.scheduler.busy(id) && this.options.prompts.pendingPrompts(id).length === 0,
    );
    for (const id of released) {
      this.accessCache.forget(id);
      this.liveAgents.delete(id);
    }
    return released.length;
  }

  /** Sessions with a hub in memory now (tests, runtime.describe). */
  get hubCount(): number {
    return this.fanOut.size;
  }

  /** Viewers attached to sessions now (metrics). */
  get viewerCount(): number {
    return this.fanOut.viewerCount;
  }

  async drain(deadline: number): Promise<string[]> {
    this.fanOut.flushHubs();
    const left = await this.scheduler.drain(deadline);
    // What the drained turns published reaches the shared stream before the store closes.
    await this.fanOut.flush(deadline);
    return left;
  }
}
