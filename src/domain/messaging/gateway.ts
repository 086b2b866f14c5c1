/**
 * The messaging gateway: every chat platform's conversations on one store and one runtime.
 *
 * inbound → intake (intake.ts: authorize, parking, redelivery check, session key) → per-session
 * queue (QUE-1..3) → turn (turn.ts) → delivery ledger → adapter. Commands are handled as they
 * arrive, even while a turn runs. One turn at a time per session key; different keys run
 * concurrently. The gateway owns the lanes: it starts what their queues promote, carries out the
 * commands the intake hands it, and runs the lifecycle.
 *
 * Lifecycle: stopped → restoring (adapters connected, inbound parked on disk, startup recovery
 * runs, the backlog is put back on its lanes) → running → draining (no new inbound, nothing new starts;
 * running turns finish or are marked shutdown_timeout; what waits stays on the backlog) → stopped,
 * with the clean-shutdown marker written last.
 */
import { randomBytes } from 'node:crypto';
import {
  inboundRefOf,
  NotConfirmable,
  type AdapterStatus,
  type InboundSink,
  type MessageEvent,
  type PlatformAdapter,
} from './adapter.js';
import type { ChatCommand } from './commands.js';
import * as queue from './queue.js';
import { AgentCache } from '../agents/agent-cache.js';
import { TypedEmitter } from '../events/typed-emitter.js';
import type { HomeChannel } from '../session/context.js';
import type { SessionKeyOptions } from '../session/key.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { ToolDefinition } from '../../runtime/types.js';
import { targetOfOrigin, type Delivery, type DeliveryLedger } from '../ports/delivery-ledger.js';
import { NOTICE_PREFIX, STALE_NOTICE } from './recovery.js';
import type { SessionEntry, TranscriptMessage } from '../vocabulary.js';
import type { SessionStore } from '../ports/session-store.js';
import { carryOutCommand, type CommandContext, type InvalidCommand, type Lane } from './chat-commands.js';
import { Deliverer } from './delivery.js';
import type { MessagingEvents } from './events.js';
import { Intake } from './intake.js';
import { Lanes } from './lanes.js';
import { compressPlatformSession, describeCompression } from './compression.js';
import type { CompressionSettings } from '../../runtime/context/prepare.js';
import { Taking } from './taking.js';
import { applyWaitingSteers, deferredSteerNotice, waitingSteers } from './steers.js';
import { RECOVERY_DEFAULTS, type RunningToolPolicy } from '../session/step-resume.js';
import { answerFailure, executeTurn, resumeEvents, startingTurn } from './turn.js';
import { budgetCommand, platformBudgetHint } from './budget-command.js';
import {
  chatPrincipal,
  mappedPrincipal,
  type MappedPrincipal,
  type PlatformMembers,
} from '../auth/chat-members.js';
import type { AuditAction, AuditEntry } from '../ports/access-store.js';
import type { SessionSource } from '../session/source.js';
import type { TurnDeps } from './turn-types.js';
import type { Semaphore } from '../concurrency/semaphore.js';
import type { BudgetGuard } from '../budget/guard.js';
import type { ModelPrice } from '../../runtime/model/pricing.js';
import type { TurnTracer } from '../../runtime/tracing.js';

export interface MessagingGatewayOptions {
  store: SessionStore;
  ledger: DeliveryLedger;
  model: ChatModel;
  modelName?: string;
  tools: ToolDefinition[];
  prompts: PromptBroker;
  /** Where a chat's tools run: one folder, or one per chat (the daemon's platform workspaces). */
  cwd: string | ((platform: string, chatId: string) => string);
  yolo?: boolean;
  /**
   * Why a member's chat turns may not run here (`auth.members` refuses what every chat turn is: its
   * model, or no safe mode), or null: a mapped member's message is answered with it and not run.
   */
  memberRefusal?: string | null;
  /** Appends an audit row of a mapped user's action (issue 30); absent: none are written. */
  audit?: (entry: AuditEntry) => Promise<void>;
  maxTurns?: number;
  baseSystemPrompt?: string;
  keyOptions?: SessionKeyOptions;
  /** CTX-2: hash user and chat ids in the prompt text. Default false. */
  redactPii?: boolean;
  /** Per platform (by name): its own keyOptions (merged over keyOptions) and redactPii. */
  platformOptions?: Readonly<Record<string, PlatformOptions>>;
  homeChannels?: HomeChannel[];
  /** In-flight markers older than this are dropped at start without resuming. Default one day. */
  recoveryMaxAgeSeconds?: number;
  /**
   * `recovery.auto_continue_freshness_s`: a turn a crash interrupted is auto-continued (REC-4) only
   * if it started at most this long ago; an older one is not, and its chat is told. Absent: no limit.
   */
  freshnessSeconds?: number;
  /**
   * `recovery.max_resumes`: the consecutive crash that finds a chat's turn still running suspends
   * its conversation (REC-5) instead of continuing it, as it makes a local turn `unknown`. Default 3.
   */
  maxResumes?: number;
  /** `limits.turn_timeout_s` in ms: a turn running longer is stopped (turn_timeout). Absent: no limit. */
  turnTimeoutMs?: number;
  /** A turn shows "typing…" once it has run this long (default 1 s): a quicker one shows none. */
  typingDelayMs?: number;
  /** …and again this often while it runs (default 4 s). */
  typingIntervalMs?: number;
  /** After a failed send, owed replies are retried this much later (and again while any fail). Default 5 s. */
  deliveryRetryMs?: number;
  /** The daemon's agent cache (AGC-1), shared with local sessions; absent: one that keeps nothing. */
  agents?: AgentCache;
  /** The model's context budget (SPEC LIN-1); without it conversations are never compressed. */
  compression?: CompressionSettings;
  /** `recovery.running_tool` (REC-7): a resumed turn whose tool was running. Default `unknown`. */
  runningTool?: RunningToolPolicy;
  /** Every turn event's type, for the daemon's test-only fault points. */
  observe?: (eventType: string) => void;
  /** Turn traces (runtime/tracing.ts); absent: none. */
  tracer?: TurnTracer;
  /**
   * `limits.max_concurrent_turns`, shared with local sessions: a turn holds a permit while it
   * runs. Absent: chat-platform turns are limited only by one per session key.
   */
  turnPermits?: Semaphore;
  /** The budget guard every model call passes (docs/cost.md, "Budgets"), and the price of the model. */
  budget?: { guard: BudgetGuard; price: ModelPrice | null };
  /**
   * Each adapter connects in the background and is tried again while its API cannot be reached
   * (the daemon: an unreachable platform must not hold up readiness). Default false: start()
   * waits for every adapter and fails with the first that cannot start.
   */
  connectInBackground?: boolean;
}

export interface PlatformOptions {
  readonly keyOptions?: SessionKeyOptions;
  readonly redactPii?: boolean;
  /** `platforms.<name>.members`: platform user id → principal (auth/chat-members.ts). */
  readonly members?: PlatformMembers;
  /**
   * `platforms.<name>.during_turn` (issue 28): what a plain message sent while a turn runs is:
   * `queue` (default) waits as the next turn (QUE-1); `steer` is applied to the running turn at its
   * next step boundary.
   */
  readonly duringTurn?: 'queue' | 'steer';
}

/** The audit action a chat command is, for a mapped user (issue 30). */
const AUDITED_COMMANDS: Partial<Record<string, AuditAction>> = {
  stop: 'interrupted',
  new: 'reset',
  reset: 'reset',
  approve: 'approved',
  deny: 'denied',
};

/**
 * A drain's resume_pending older than the window, counted from when the drain marked it (the
 * turn's own start is not kept across a clean stop; it was no later than that).
 */
function isStale(entry: SessionEntry, freshnessSeconds: number): boolean {
  if (entry.resume_reason !== 'shutdown_timeout' || entry.last_resume_marked_at === null) return false;
  return Date.now() - Date.parse(entry.last_resume_marked_at) > freshnessSeconds * 1000;
}

export type GatewayState = 'stopped' | 'restoring' | 'running' | 'draining';

/** The abort reason of turns a drain interrupts at its deadline (an outcome of `interrupted`). */
const SHUTDOWN = 'shutdown';
/** The abort reason of turns halt() stops: the bots' leases are gone (their writes are refused). */
const LEASE_LOST = 'lease_lost';

export class MessagingGateway {
  readonly events = new TypedEmitter<MessagingEvents>();
  private readonly adapters = new Map<string, PlatformAdapter>();
  private readonly lanes: Lanes;
  private readonly taking = new Taking();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly intake: Intake;
  private readonly deps: TurnDeps;
  private readonly deliverer: Deliverer;
  private readonly commandContext: CommandContext;
  private state: GatewayState = 'stopped';
  /** Set by halt(): this instance may no longer act for its bots (SCL-1); nothing is sent from now. */
  private halted = false;
  private halting: Promise<void> | null = null;
  /** deliverRecorded was called while the gateway restored: a sweep follows once it runs. */
  private owedWhileRestoring = false;
  /** In a cluster: false once this instance may no longer confirm inbound events (see guardConfirmations). */
  private confirmable: (() => boolean) | null = null;
  /** The stop in progress; a second stop() joins it and ends its wait for running turns at once. */
  private stopping: { done: Promise<void>; cut: () => void } | null = null;
  /** What ends the waits of adapters connecting in the background (connect) between attempts. */
  private readonly stopConnecting = new Set<() => void>();
  /** Platforms whose last start failed: why, and when they are tried again. */
  private readonly retrying = new Map<string, { why: string; at: string }>();

  constructor(private readonly options: MessagingGatewayOptions) {
    this.commandContext = {
      store: options.store,
      prompts: options.prompts,
      arrive: (lane, item) => this.arrive(lane, item),
      dropped: (lane) => this.lanes.changed(lane, 'dropped'),
      compress: (lane, event) => this.compressNow(lane, event),
      budget: (lane, event, command) =>
        budgetCommand(
          options.budget && { ledger: options.store, guard: options.budget.guard },
          {
            sessionKey: lane.key,
            spender: chatPrincipal(event.source, this.principalFor(event.source)),
            mapped: this.principalFor(event.source),
            platform: event.source.platform,
          },
          command,
        ),
      principalFor: (event) => this.principalFor(event.source),
    };
    const refOf = (event: MessageEvent) =>
      inboundRefOf(event, (id) => this.adapters.get(event.source.platform)?.normalizeChatId(id) ?? id);
    this.lanes = new Lanes(options.ledger, refOf);
    this.events.on('turn:start', ({ turn_id }) => this.taking.turnTook(turn_id));
    this.deliverer = new Deliverer(
      options.ledger,
      (p) => (this.halted ? undefined : this.adapters.get(p)),
      this.events,
      {
        retryMs: options.deliveryRetryMs ?? 5000,
        track: (work) => this.track(work),
      },
    );
    this.deps = {
      store: options.store,
      ledger: options.ledger,
      deliverer: this.deliverer,
      model: options.model,
      modelName: options.modelName,
      tools: options.tools,
      prompts: options.prompts,
      cwdFor: typeof options.cwd === 'string' ? () => options.cwd as string : options.cwd,
      yolo: options.yolo ?? false,
      principalFor: (source) => this.principalFor(source),
      takeSteers: (key, sessionId, turnId, build) => this.takeSteers(key, sessionId, turnId, build),
      ...(options.audit ? { audit: (entry: AuditEntry) => this.audit(entry) } : {}),
      maxTurns: options.maxTurns ?? 20,
      turnTimeoutMs: options.turnTimeoutMs ?? null,
      baseSystemPrompt: options.baseSystemPrompt ?? '',
      keyOptionsFor: (p) => ({ ...options.keyOptions, ...options.platformOptions?.[p]?.keyOptions }),
      redactPiiFor: (p) => options.platformOptions?.[p]?.redactPii ?? options.redactPii ?? false,
      homeChannels: options.homeChannels ?? [],
      typing: { delayMs: options.typingDelayMs ?? 1000, intervalMs: options.typingIntervalMs ?? 4000 },
      events: this.events,
      streaking: new Set(),
      resumePoints: new Map(),
      runningTool: options.runningTool ?? RECOVERY_DEFAULTS.runningTool,
      ...(options.observe ? { observe: options.observe } : {}),
      ...(options.tracer ? { tracer: options.tracer } : {}),
      ...(options.turnPermits ? { permits: options.turnPermits } : {}),
      ...(options.budget ? { budget: options.budget } : {}),
      backlogTaken: (key, itemId) => this.lanes.taken(key, itemId),
      halted: () => this.halted,
      connectedPlatforms: () => [...this.adapters.keys()],
      piiSafePlatforms: () => [...this.adapters.values()].filter((a) => a.piiSafe).map((a) => a.platform),
      agents:
        options.agents ??
        new AgentCache({
          source: options.store,
          limits: { maxSize: 0, idleTtlMs: 0, maxEvictionsPerPass: 0, protectRecent: 0 },
        }),
      ...(options.compression
        ? {
            compression: {
              store: options.store,
              model: options.model,
              modelName: options.modelName,
              settings: options.compression,
              events: this.events,
            },
          }
        : {}),
    };
    // A replaced transcript (a compression, in a turn or by /compress) drops the lane's cached agent.
    this.events.on('transcript:replaced', (e) => this.deps.agents.invalidate(e.session_key));
    this.intake = new Intake({
      ledger: options.ledger,
      prompts: options.prompts,
      events: this.events,
      lanes: this.lanes,
      taking: this.taking,
      refOf,
      adapterFor: (p) => this.adapters.get(p),
      keyOptionsFor: (p) => this.deps.keyOptionsFor(p),
      mode: () =>
        this.state === 'running' ? 'admitting' : this.state === 'restoring' ? 'parking' : 'closed',
      arrive: (lane, item) => this.arrive(lane, item),
      command: (lane, adapter, event, command) => this.command(lane, adapter, event, command),
      steers: (platform) => options.platformOptions?.[platform]?.duringTurn === 'steer',
      refusal: (event) =>
        this.principalFor(event.source)?.role === 'member' ? (options.memberRefusal ?? null) : null,
      track: (work) => this.track(work),
    });
  }

  /** The principal the sender of `source` is mapped to on its platform (issue 30), or null. */
  principalFor(source: SessionSource): MappedPrincipal | null {
    return mappedPrincipal(source, this.options.platformOptions?.[source.platform]?.members);
  }

  /** Appends an audit row in the background: a failed append is logged by nobody and loses no turn. */
  private audit(entry: AuditEntry): void {
    const append = this.options.audit;
    if (append !== undefined) this.track(append(entry).catch(() => undefined));
  }

  get lifecycleState(): GatewayState {
    return this.state;
  }

  /** Adds an adapter before start(). One adapter per platform name. */
  addAdapter(adapter: PlatformAdapter): void {
    if (this.state !== 'stopped') throw new Error('addAdapter: the gateway has already started');
    if (this.adapters.has(adapter.platform)) throw new Error(`adapter for ${adapter.platform} already added`);
    this.adapters.set(adapter.platform, adapter);
  }

  /** The platforms this gateway has adapters for (CTX-1: what a session's context names as connected). */
  connectedPlatforms(): string[] {
    return [...this.adapters.keys()];
  }

  /**
   * Sends an obligation another engine put on the ledger (a scheduled job's result for a home
   * channel, docs/scheduling.md). Only while the gateway runs: otherwise it stays owed, and the
   * start-up sweep (or sweepOwed on the instance holding the bots) sends it. True once sent.
   */
  deliverRecorded(delivery: Delivery): Promise<boolean> {
    // Recorded after the start-up sweep listed the ledger: sent by a sweep once the gateway runs.
    if (this.state === 'restoring') this.owedWhileRestoring = true;
    if (this.state !== 'running' || this.halted) return Promise.resolve(false);
    return this.deliverer.deliver(delivery);
  }

  /** Sends what the ledger owes that no turn is sending itself (a cluster's home-channel results). */
  async sweepOwed(): Promise<number> {
    if (this.state !== 'running' || this.halted) return 0;
    return this.deliverer.sweep({ recovered: false });
  }

  /** Every adapter's status(), for `gatehouse status`; changes are the `adapter:status` event. */
  adapterStatuses(): AdapterStatus[] {
    return [...this.adapters.values()].map((a) => this.statusOf(a));
  }

  /** How many lanes exist now: keys with a turn running, events waiting or a command under way. */
  get laneCount(): number {
    return this.lanes.size;
  }

  /**
   * Connects the adapters, then runs start-up recovery (REC-4, REC-5) while inbound messages wait,
   * then auto-continues interrupted sessions, puts the backlog (what waited in the queues when the
   * last process ended) back on its lanes and finally lets the waiting messages in, in order.
   */
  async start(): Promise<void> {
    if (this.state !== 'stopped') throw new Error('start: the gateway is not stopped');
    this.state = 'restoring';
    this.deliverer.retries('held');
    await this.intake.loadParked();
    // Each platform connects in the background, trying again while its API cannot be reached: an
    // unreachable platform must not hold up recovery, the other platforms or local sessions. What
    // its chats owe waits meanwhile (QUE-3 for turns, the deliverer's retries for replies).
    for (const adapter of this.adapters.values()) {
      if (this.options.connectInBackground === true) void this.connect(adapter);
      else await adapter.start(this.sinkFor(adapter), (status) => this.adapterStatusChanged(status));
    }
    const report = await this.options.ledger.recover({
      maxAgeSeconds: this.options.recoveryMaxAgeSeconds ?? 86_400,
      ...(this.options.freshnessSeconds === undefined
        ? {}
        : { freshnessSeconds: this.options.freshnessSeconds }),
      ...(this.options.maxResumes === undefined ? {} : { stuckAfter: this.options.maxResumes }),
    });
    // Answered already (settled) or too old to continue (stale, its chat told): not auto-continued.
    for (const key of [...report.settled, ...report.stale]) await this.options.store.clearResumePending(key);
    for (const key of report.resumed) this.deps.streaking.add(key);
    for (const [key, record] of Object.entries(report.steps)) this.deps.resumePoints.set(key, record);
    const delivered = await this.deliverer.sweep();
    const autoContinued = await this.autoContinue();
    // What waited in the queues when the last process ended, after the turns it waited behind.
    const requeued = await this.lanes.restore((lane, item) => this.enqueue(lane, item));
    // Halted while it restored (SCL-1: the bots' leases went): it never runs.
    if (this.halted) return;
    this.state = 'running';
    for (const adapter of this.adapters.values())
      if (adapter.status().state === 'running') this.resumePutBack(adapter.platform);
    this.events.emit('recovery:done', { ...report, delivered, auto_continued: autoContinued, requeued });
    this.deliverer.retries('on');
    this.intake.admitParked();
    if (this.owedWhileRestoring) {
      this.owedWhileRestoring = false;
      this.track(this.deliverer.sweep({ recovered: false }).then(() => undefined));
    }
  }

  /**
   * Graceful stop (REC-6): stop receiving, let running turns finish until `timeoutMs`, mark the
   * rest resume_pending (shutdown_timeout) and interrupt them, then write the clean-shutdown marker.
   * Nothing new starts meanwhile: events still waiting stay on the backlog and run after the next
   * start. A second call while a stop is under way ends the wait at once and resolves with it.
   */
  stop(options: { timeoutMs?: number } = {}): Promise<void> {
    // Halted (SCL-1): no drain and no clean-shutdown marker, whose writes would be refused.
    if (this.halting !== null) return this.halting;
    if (this.stopping !== null) {
      this.stopping.cut();
      return this.stopping.done;
    }
    if (this.state === 'stopped') return Promise.resolve();
    let cut = () => {};
    const deadline = new Promise<true>((resolve) => {
      const timer = setTimeout(() => resolve(true), options.timeoutMs ?? 30_000);
      cut = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
    const done = this.drain(deadline).finally(() => {
      cut();
      this.stopping = null;
    });
    this.stopping = { done, cut };
    return done;
  }

  private async drain(deadline: Promise<true>): Promise<void> {
    this.state = 'draining';
    this.deliverer.retries('off');
    this.endConnecting();
    // An adapter still connecting (its API does not answer) is not waited for past the deadline.
    for (const adapter of this.adapters.values()) await Promise.race([adapter.stop(), deadline]);
    const timedOut = await Promise.race([this.settleInFlight().then(() => false), deadline]);
    if (timedOut) {
      for (const lane of this.lanes.values()) {
        const running = lane.running;
        if (running === null) continue;
        // A turn that took its event continues after the restart (REC-6); one still looking up its
        // session gives its event back to the queue, and so to the backlog (launch).
        if (running.started) await this.options.store.markResumePending(lane.key, 'shutdown_timeout');
        running.abort.abort(SHUTDOWN);
      }
      await this.settleInFlight();
    }
    await this.options.ledger.writeCleanShutdown();
    this.state = 'stopped';
    this.events.emit('gateway:stopped', { clean: true });
  }

  /**
   * SCL-1: `confirmable` answers whether an event handed in now may be confirmed to its platform;
   * once it is false the sink rejects with NotConfirmable (cluster-bots.ts latches it false the
   * first time the bot fence answers no token while the gateway runs).
   */
  guardConfirmations(confirmable: () => boolean): void {
    this.confirmable = confirmable;
  }

  /**
   * SCL-1: this instance lost its bots' leases, or may lose them soon (its renewals stalled). It
   * stops at once, without the drain's writes: receiving ends, every running turn is aborted (its
   * tool's process killed) and nothing is sent any more. Its writes are refused by the store's
   * fence from before this is called, so a running turn stays `running` on its marker and the
   * instance that takes the bots over recovers it as after a crash (REC-4, REC-7). No
   * clean-shutdown marker is written.
   */
  halt(): Promise<void> {
    if (this.state === 'stopped' && !this.halted) return Promise.resolve();
    this.halting ??= this.haltNow();
    return this.halting;
  }

  private async haltNow(): Promise<void> {
    this.halted = true;
    this.state = 'draining';
    this.deliverer.retries('off');
    this.endConnecting();
    for (const lane of this.lanes.values()) lane.running?.abort.abort(LEASE_LOST);
    for (const adapter of this.adapters.values()) await adapter.stop().catch(() => undefined);
    await this.settleInFlight();
    this.state = 'stopped';
    this.events.emit('gateway:stopped', { clean: false });
  }

  /** No adapter is started again: the waits between attempts end (the loops see the new state). */
  private endConnecting(): void {
    for (const wake of [...this.stopConnecting]) wake();
  }

  /** Resolves once no admission, turn, command or delivery is in progress (tests, operators). */
  whenIdle(): Promise<void> {
    return this.settleInFlight();
  }

  /**
   * Waits until nothing is in flight, including work that in-flight work started meanwhile (a
   * finished turn promoting the next queued event, an admission launching a turn).
   */
  private async settleInFlight(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /**
   * Starts `adapter`, and again after each failure (1 s, doubling, at most a minute apart) until it
   * runs or the gateway stops. Its status meanwhile is `starting` or `failed` with the reason and
   * when it is tried again (`gatehouse status`).
   */
  private async connect(adapter: PlatformAdapter): Promise<void> {
    const sink = this.sinkFor(adapter);
    for (let attempt = 0; this.state === 'restoring' || this.state === 'running'; attempt++) {
      try {
        await adapter.start(sink, (status) => this.adapterStatusChanged(status));
        this.retrying.delete(adapter.platform);
        return;
      } catch (error) {
        const retryInMs = Math.min(60_000, 1000 * 2 ** attempt);
        const why = error instanceof Error ? error.message : String(error);
        this.retrying.set(adapter.platform, { why, at: new Date(Date.now() + retryInMs).toISOString() });
        this.events.emit('adapter:status', this.statusOf(adapter));
        await new Promise<void>((resolve) => {
          const wake = () => {
            clearTimeout(timer);
            this.stopConnecting.delete(wake);
            resolve();
          };
          const timer = setTimeout(wake, retryInMs);
          this.stopConnecting.add(wake);
        });
      }
    }
  }

  private sinkFor(adapter: PlatformAdapter): InboundSink {
    return async (event) => {
      await this.intake.receive(adapter, event);
      // Checked after the take: a refused write (the bots' leases going) must not be confirmed.
      if (this.halted || !(this.confirmable?.() ?? true)) throw new NotConfirmable();
    };
  }

  /** The adapter's status, saying when a failed start is tried again. */
  private statusOf(adapter: PlatformAdapter): AdapterStatus {
    const status = adapter.status();
    const retry = this.retrying.get(adapter.platform);
    if (retry === undefined || status.state !== 'failed') return status;
    return { ...status, detail: status.detail ?? retry.why, retry_at: retry.at };
  }

  private adapterStatusChanged(status: AdapterStatus): void {
    this.events.emit('adapter:status', status);
    if (status.state !== 'running' || this.state !== 'running') return;
    this.resumePutBack(status.platform);
  }

  /**
   * QUE-3: what was put back while `platform` could not take it runs now that it can. Called when
   * the adapter reports running, and for every running adapter once a start's restore ended: an
   * adapter that came up while the gateway restored (its report then ignored) finds a resumed turn
   * put back by the auto-continue, which would otherwise wait for the chat's next message.
   */
  private resumePutBack(platform: string): void {
    for (const lane of this.lanes.values()) {
      if (lane.state.mode !== 'idle' || lane.state.slot?.payload.source.platform !== platform) continue;
      const step = queue.resume(lane.state);
      lane.state = step.state;
      if (step.start !== null) this.launch(lane, step.start);
      this.track(this.lanes.changed(lane, 'dropped'));
    }
  }

  /** The session keys with a turn running now (housekeeping never prunes their routes). */
  runningSessionKeys(): string[] {
    return [...this.lanes.values()].filter((lane) => lane.running != null).map((lane) => lane.key);
  }

  /** Status of one lane, for /status and operators. */
  describeLane(sessionKey: string): { running: boolean; depth: number } {
    const lane = this.lanes.get(sessionKey);
    return { running: lane?.running != null, depth: lane === undefined ? 0 : queue.queueDepth(lane.state) };
  }

  /** Puts the event on the lane's queue (starting it if the lane is idle) and saves what waits. */
  private arrive(lane: Lane, item: queue.QueueItem<MessageEvent>): Promise<void> {
    this.enqueue(lane, item);
    // The only event an arrival can push out of the queue is a follow-up a newer one replaced.
    return this.lanes.changed(lane, 'collapsed');
  }

  /** A /queue command's arrive: the item, once taken, takes the message that asked for it. */
  private async arriveQueued(lane: Lane, item: queue.QueueItem<MessageEvent>, origin: MessageEvent) {
    this.taking.derived(item.payload, origin);
    await this.arrive(lane, item);
    if (!this.taking.awaitingTurn(item.payload)) this.taking.taken(item.payload);
  }

  private enqueue(lane: Lane, item: queue.QueueItem<MessageEvent>): void {
    const step = queue.arrive(lane.state, item);
    lane.state = step.state;
    if (step.start !== null) this.launch(lane, step.start);
  }

  /** Starts a promoted event; the caller saves the lane afterwards (changed). */
  private launch(lane: Lane, item: queue.QueueItem<MessageEvent>): void {
    const adapter = this.adapters.get(item.payload.source.platform);
    const draining = this.state === 'draining' || this.state === 'stopped';
    if (draining || adapter === undefined || adapter.status().state !== 'running') {
      // QUE-3: back on the queue, never dropped; it runs when the adapter reports running again
      // (adapterStatusChanged), or when the next event for this lane arrives. During a drain the
      // adapters have stopped, so nothing new starts: it stays on the backlog for the next start.
      lane.state = queue.putBack(lane.state, item);
      this.events.emit('queue:requeued', { session_key: lane.key, platform: item.payload.source.platform });
      return;
    }
    // Registered before the first await, so a /stop or /new arriving while the turn looks up its
    // session still finds it.
    const running = startingTurn(this.lanes.rowOf(lane, item.payload));
    lane.running = running;
    this.taking.launched(running.turnId, item.payload);
    this.track(
      executeTurn(this.deps, lane.key, item.payload, adapter, running)
        .catch((error: unknown) => answerFailure(this.deps, lane.key, item.payload, adapter, running, error))
        .finally(() => {
          lane.running = null;
          if (!running.started && running.abort.signal.reason === SHUTDOWN) {
            // The drain stopped it before it took its event: the event waits again, on the backlog.
            lane.state = queue.putBack(lane.state, item);
          } else {
            // A stopped turn (/stop, a timeout) had steps left: its steers just run next, untold.
            if (!running.abort.signal.aborted) this.tellDeferredSteers(lane, adapter, item.payload);
            const step = queue.finish(lane.state);
            lane.state = step.state;
            if (step.start !== null) this.launch(lane, step.start);
          }
          // An event whose turn ended before taking its row (/stop while it started) is dropped; one
          // the drain gave back is on the backlog once this save is done: either way it is taken.
          return this.lanes.changed(lane, 'dropped').finally(() => this.taking.turnTook(running.turnId));
        }),
    );
  }

  private async command(
    lane: Lane,
    adapter: PlatformAdapter,
    event: MessageEvent,
    command: ChatCommand | InvalidCommand,
  ): Promise<void> {
    const reply = (text: string) =>
      adapter.send(event.source.chat_id, text, { thread_id: event.source.thread_id, reply_to: null });
    const context: CommandContext = {
      ...this.commandContext,
      arrive: (l, item) => this.arriveQueued(l, item, event),
    };
    try {
      const outcome = await carryOutCommand(context, lane, event, command, reply);
      this.auditCommand(lane, event, command, outcome);
      this.events.emit('command:handled', { session_key: lane.key, command: command.name });
    } finally {
      // A /queue whose item never got queued (the command failed first) releases its message too.
      if (!this.taking.awaitingTurn(event)) this.taking.taken(event);
      // Wake-ups that survived the command (and anything put back) start right after it (QUE-2),
      // also when its answer could not be sent.
      const step = queue.resume(lane.state);
      lane.state = step.state;
      if (step.start !== null) this.launch(lane, step.start);
      lane.commands--;
      await this.lanes.changed(lane, 'dropped');
    }
  }

  /** Issue 28: the steers waiting on the key's lane, applied to its running turn (steers.ts). */
  private takeSteers(
    key: string,
    sessionId: string,
    turnId: string,
    build: (event: MessageEvent, steerId: string) => TranscriptMessage,
  ): Promise<TranscriptMessage[]> {
    const lane = this.lanes.get(key);
    if (lane === undefined) return Promise.resolve([]);
    return applyWaitingSteers(
      {
        ledger: this.options.ledger,
        lanes: this.lanes,
        events: this.events,
        refOf: (event) =>
          inboundRefOf(event, (id) => this.adapters.get(event.source.platform)?.normalizeChatId(id) ?? id),
      },
      lane,
      { sessionId, turnId },
      build,
    );
  }

  /** Steers still waiting when their turn ended run as the next turns: the chat is told so, once. */
  private tellDeferredSteers(lane: Lane, adapter: PlatformAdapter, ended: MessageEvent): void {
    const count = waitingSteers(lane).length;
    if (count === 0) return;
    this.events.emit('steer:deferred', { session_key: lane.key, count });
    this.track(
      adapter
        .send(ended.source.chat_id, deferredSteerNotice(count), {
          thread_id: ended.source.thread_id,
          reply_to: null,
        })
        .then(() => undefined),
    );
  }

  /** A mapped user's /stop, /new, /approve or /deny: one audit row naming their principal. */
  private auditCommand(
    lane: Lane,
    event: MessageEvent,
    command: ChatCommand | InvalidCommand,
    outcome: string,
  ): void {
    const action = AUDITED_COMMANDS[command.name];
    const mapped = this.principalFor(event.source);
    if (action === undefined || mapped === null || this.options.audit === undefined) return;
    this.track(
      this.options.store.getOrCreateSession(lane.key, event.source.toJSON()).then(({ entry }) =>
        this.audit({
          at: new Date().toISOString(),
          principal: mapped.subject,
          path: event.source.platform,
          action,
          session_id: entry.session_id,
          outcome,
          detail: null,
        }),
      ),
    );
  }

  /** /compress on a chat: the key's current session, now (the lane runs nothing meanwhile). */
  private async compressNow(lane: Lane, event: MessageEvent): Promise<string> {
    const compression = this.deps.compression;
    if (compression === undefined) return 'Compression is not configured for this gateway.';
    const entry = (await this.options.store.getOrCreateSession(lane.key, event.source.toJSON())).entry;
    // The summary's calls are reserved and settled as the sender's, under an id no turn has.
    const budget = this.deps.budget;
    const turnId = `compress_${randomBytes(9).toString('base64url')}`;
    const model = budget
      ? budget.guard.guard(compression.model, {
          sessionKey: lane.key,
          principal: chatPrincipal(event.source, this.principalFor(event.source)),
          turnId,
          sessionLimit: null,
          price: budget.price,
          hint: platformBudgetHint(this.principalFor(event.source)),
          emit: (budgetEvent) =>
            this.events.emit('budget', { session_key: lane.key, turn_id: turnId, event: budgetEvent }),
        })
      : compression.model;
    return describeCompression(
      await compressPlatformSession({ ...compression, model }, lane.key, entry.session_id, 'manual'),
    );
  }

  /**
   * REC-4: every resume_pending session whose platform is connected continues once. One a drain
   * marked (shutdown_timeout) longer ago than the freshness window is not: its chat is told once,
   * through the ledger (a crash's stale turns were told by recovery already).
   */
  private async autoContinue(): Promise<string[]> {
    const continued: string[] = [];
    const freshness = this.options.freshnessSeconds;
    const resumable = resumeEvents(this.options.store, (p) => this.adapters.has(p));
    for await (const { sessionKey, entry, event } of resumable) {
      if (freshness !== undefined && isStale(entry, freshness)) {
        await this.oweStaleNotice(entry);
        continue;
      }
      // resume_pending brings it back at every start until a turn completes: never on the backlog.
      this.lanes.markDerived(event);
      await this.arrive(this.lanes.open(sessionKey), { kind: 'internal', payload: event });
      continued.push(sessionKey);
    }
    return continued;
  }

  /** The stale notice on the ledger (idempotent per marking), then the end of resume_pending. */
  private async oweStaleNotice(entry: SessionEntry): Promise<void> {
    const delivery = await this.options.ledger.recordReply({
      turnId: `${NOTICE_PREFIX}stale:${entry.session_key}:${entry.session_id}:${entry.last_resume_marked_at}`,
      sessionKey: entry.session_key,
      sessionId: entry.session_id,
      target: targetOfOrigin(entry.origin!),
      text: STALE_NOTICE,
      silent: false,
    });
    await this.options.store.clearResumePending(entry.session_key);
    await this.deliverer.deliver(delivery);
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined).finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
