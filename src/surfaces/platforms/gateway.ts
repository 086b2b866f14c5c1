/**
 * The messaging gateway: every chat platform's conversations on one store and one runtime.
 *
 * inbound → authorize → redelivery check (inbound ledger) → session key (KEY-1) → per-session
 * queue (QUE-1..3) → turn (turn.ts) → delivery ledger → adapter. Commands are handled as they
 * arrive, even while a turn runs. One turn at a time per session key; different keys run
 * concurrently. Inbound events are admitted one at a time, in arrival order (the redelivery check
 * is a store read, and it must not let a later message of a chat overtake an earlier one).
 *
 * Lifecycle: stopped → restoring (adapters connected, inbound deferred, startup recovery runs) →
 * running → draining (no new inbound; running turns finish or are marked shutdown_timeout) →
 * stopped, with the clean-shutdown marker written last.
 */
import {
  inboundRefOf,
  type AdapterStatus,
  type InboundRef,
  type InboundSink,
  type MessageEvent,
  type PlatformAdapter,
} from '../../domain/messaging/adapter.js';
import { parseCommand, type ChatCommand } from '../../domain/messaging/commands.js';
import * as queue from '../../domain/messaging/queue.js';
import { TypedEmitter } from '../../domain/events/typed-emitter.js';
import type { HomeChannel } from '../../domain/session/context.js';
import { buildSessionKey, type SessionKeyOptions } from '../../domain/session/key.js';
import { SessionSource } from '../../domain/session/source.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import type { ChatModel } from '../../runtime/model/client.js';
import type { ToolDefinition } from '../../runtime/types.js';
import type { DeliveryLedger } from '../../storage/delivery-ledger.js';
import type { SessionStore } from '../../storage/session-store.js';
import { carryOutCommand, type CommandContext, type InvalidCommand, type Lane } from './chat-commands.js';
import { Deliverer } from './delivery.js';
import type { MessagingEvents } from './events.js';
import { executeTurn, RESUME_NOTE, startingTurn, type TurnDeps } from './turn.js';

export interface MessagingGatewayOptions {
  store: SessionStore;
  ledger: DeliveryLedger;
  model: ChatModel;
  modelName?: string;
  tools: ToolDefinition[];
  prompts: PromptBroker;
  cwd: string;
  yolo?: boolean;
  maxTurns?: number;
  baseSystemPrompt?: string;
  keyOptions?: SessionKeyOptions;
  /** CTX-2: hash user and chat ids in the prompt text. Default false. */
  redactPii?: boolean;
  homeChannels?: HomeChannel[];
  /** In-flight markers older than this are dropped at start without resuming. Default one day. */
  recoveryMaxAgeSeconds?: number;
  typingIntervalMs?: number;
  /** After a failed send, owed replies are retried this much later (and again while any fail). Default 5 s. */
  deliveryRetryMs?: number;
}

export type GatewayState = 'stopped' | 'restoring' | 'running' | 'draining';

export class MessagingGateway {
  readonly events = new TypedEmitter<MessagingEvents>();
  private readonly adapters = new Map<string, PlatformAdapter>();
  private readonly lanes = new Map<string, Lane>();
  private readonly deferred: { adapter: PlatformAdapter; event: MessageEvent }[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  /** The tail of the serial admission chain (see admit). */
  private intake: Promise<void> = Promise.resolve();
  private readonly deps: TurnDeps;
  private readonly deliverer: Deliverer;
  private readonly commandContext: CommandContext;
  private state: GatewayState = 'stopped';
  private retryTimer: NodeJS.Timeout | null = null;
  /** A send failed before the gateway was running (the start-up sweep): retry once it is. */
  private retryWanted = false;

  constructor(private readonly options: MessagingGatewayOptions) {
    this.commandContext = {
      store: options.store,
      prompts: options.prompts,
      arrive: (lane, item) => this.arrive(lane, item),
    };
    this.deliverer = new Deliverer(options.ledger, (p) => this.adapters.get(p), this.events);
    // An owed reply that failed to send is not left for the next restart: it is retried in this run.
    this.events.on('delivery:failed', () => this.scheduleDeliveryRetry());
    this.deps = {
      store: options.store,
      ledger: options.ledger,
      deliverer: this.deliverer,
      model: options.model,
      modelName: options.modelName,
      tools: options.tools,
      prompts: options.prompts,
      cwd: options.cwd,
      yolo: options.yolo ?? false,
      maxTurns: options.maxTurns ?? 20,
      baseSystemPrompt: options.baseSystemPrompt ?? '',
      keyOptions: options.keyOptions ?? {},
      redactPii: options.redactPii ?? false,
      homeChannels: options.homeChannels ?? [],
      typingIntervalMs: options.typingIntervalMs ?? 4000,
      events: this.events,
      streaking: new Set(),
      connectedPlatforms: () => [...this.adapters.keys()],
      piiSafePlatforms: () => [...this.adapters.values()].filter((a) => a.piiSafe).map((a) => a.platform),
    };
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

  /** Every adapter's status(), for `gatehouse status`; changes are the `adapter:status` event. */
  adapterStatuses(): AdapterStatus[] {
    return [...this.adapters.values()].map((a) => a.status());
  }

  /**
   * Connects the adapters, then runs start-up recovery (REC-4, REC-5) while inbound messages wait,
   * then auto-continues interrupted sessions and finally lets the waiting messages in, in order.
   */
  async start(): Promise<void> {
    if (this.state !== 'stopped') throw new Error('start: the gateway is not stopped');
    this.state = 'restoring';
    for (const adapter of this.adapters.values()) {
      const sink: InboundSink = (event) => this.receive(adapter, event);
      await adapter.start(sink, (status) => this.adapterStatusChanged(status));
    }
    const report = await this.options.ledger.recover({
      maxAgeSeconds: this.options.recoveryMaxAgeSeconds ?? 86_400,
    });
    for (const key of report.settled) await this.options.store.clearResumePending(key);
    for (const key of report.resumed) this.deps.streaking.add(key);
    const delivered = await this.deliverer.sweep();
    const autoContinued = await this.autoContinue();
    this.state = 'running';
    this.events.emit('recovery:done', { ...report, delivered, auto_continued: autoContinued });
    if (this.retryWanted) this.scheduleDeliveryRetry();
    for (const { adapter, event } of this.deferred.splice(0)) this.admit(adapter, event);
  }

  /**
   * Graceful stop (REC-6): stop receiving, let running turns finish until `timeoutMs`, mark the
   * rest resume_pending (shutdown_timeout) and interrupt them, then write the clean-shutdown marker.
   */
  async stop(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.state === 'stopped') return;
    this.state = 'draining';
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    for (const adapter of this.adapters.values()) await adapter.stop();
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.settleInFlight().then(() => false),
      new Promise<boolean>(
        (resolve) => (timer = setTimeout(() => resolve(true), options.timeoutMs ?? 30_000)),
      ),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      for (const lane of this.lanes.values()) {
        if (lane.running === null) continue;
        await this.options.store.markResumePending(lane.key, 'shutdown_timeout');
        lane.running.abort.abort('interrupted');
      }
      await this.settleInFlight();
    }
    await this.options.ledger.writeCleanShutdown();
    this.state = 'stopped';
    this.events.emit('gateway:stopped', { clean: true });
  }

  /**
   * Waits until nothing is in flight, including work that in-flight work started meanwhile (a
   * finished turn promoting the next queued event, an admission launching a turn).
   */
  private async settleInFlight(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private scheduleDeliveryRetry(): void {
    if (this.state === 'restoring') this.retryWanted = true;
    if (this.retryTimer !== null || this.state !== 'running') return;
    this.retryWanted = false;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      if (this.state !== 'running') return;
      this.track(this.deliverer.sweep({ recovered: false }).then(() => undefined));
    }, this.options.deliveryRetryMs ?? 5000);
    this.retryTimer.unref();
  }

  private adapterStatusChanged(status: AdapterStatus): void {
    this.events.emit('adapter:status', status);
    if (status.state !== 'running' || this.state !== 'running') return;
    // QUE-3: what was put back while this platform could not take it runs now that it can.
    for (const lane of this.lanes.values()) {
      if (lane.state.mode !== 'idle' || lane.state.slot?.payload.source.platform !== status.platform)
        continue;
      const step = queue.resume(lane.state);
      lane.state = step.state;
      if (step.start !== null) this.launch(lane, step.start);
    }
  }

  /** Status of one lane, for /status and operators. */
  describeLane(sessionKey: string): { running: boolean; depth: number } {
    const lane = this.lanes.get(sessionKey);
    return { running: lane?.running != null, depth: lane === undefined ? 0 : queue.queueDepth(lane.state) };
  }

  /** Inbound from an adapter. Never throws: an adapter must not be broken by one bad message. */
  private receive(adapter: PlatformAdapter, event: MessageEvent): void {
    if (this.state === 'stopped' || this.state === 'draining') return;
    if (!adapter.authorize(event.source)) {
      this.events.emit('inbound:refused', { platform: adapter.platform, user_id: event.source.user_id });
      return;
    }
    if (this.state === 'restoring') {
      this.deferred.push({ adapter, event });
      this.events.emit('inbound:deferred', { platform: adapter.platform });
      return;
    }
    this.admit(adapter, event);
  }

  /** Queues the event on the admission chain: each is accepted after the one before it. */
  private admit(adapter: PlatformAdapter, event: MessageEvent): void {
    const step = this.intake.then(() => this.accept(adapter, event));
    this.intake = step.catch(() => undefined);
    this.track(step);
  }

  private async accept(adapter: PlatformAdapter, event: MessageEvent): Promise<void> {
    const ref = inboundRefOf(event, (id) => adapter.normalizeChatId(id));
    if (ref !== null && (await this.wasTaken(ref))) {
      this.events.emit('inbound:duplicate', { ...ref });
      return;
    }
    const key = buildSessionKey(event.source, this.deps.keyOptions);
    this.events.emit('inbound:accepted', { session_key: key, text: event.text, internal: event.internal });
    const lane = this.lane(key);
    if (!event.internal) {
      const command = parseCommand(event.text);
      if (command !== null) {
        // A command acts now, so it is taken now, before it acts: a crash in between loses the
        // command rather than repeating it (a second /undo would undo one exchange too many).
        // A /queue item is taken by the turn it becomes, so a crash before that turn loses nothing.
        if (ref !== null && command.name !== 'queue') await this.take(ref, key);
        this.track(this.command(lane, adapter, event, command));
        return;
      }
      // A pending clarify question takes the next plain message as its answer.
      const clarify = lane.running?.clarify;
      const clarifyingSession = lane.running?.sessionId;
      if (clarify != null && clarifyingSession != null) {
        this.options.prompts.respondClarify({
          session_id: clarifyingSession,
          ...clarify,
          answer: event.text,
        });
        if (ref !== null) await this.take(ref, key);
        return;
      }
    }
    // A turn takes its message when it starts (executeTurn), with its in-flight marker.
    this.arrive(lane, { kind: event.internal ? 'internal' : 'message', payload: event });
  }

  /**
   * The redelivery check fails open: when the store cannot answer, a possible duplicate turn is
   * better than a lost message (and the turn itself will report the store's failure).
   */
  private wasTaken(ref: InboundRef): Promise<boolean> {
    return this.options.ledger.isInboundTaken(ref).catch(() => false);
  }

  private take(ref: InboundRef, key: string): Promise<void> {
    return this.options.ledger.takeInbound(ref, key).catch(() => undefined);
  }

  private arrive(lane: Lane, item: queue.QueueItem<MessageEvent>): void {
    const step = queue.arrive(lane.state, item);
    lane.state = step.state;
    if (step.start !== null) this.launch(lane, step.start);
  }

  private launch(lane: Lane, item: queue.QueueItem<MessageEvent>): void {
    const adapter = this.adapters.get(item.payload.source.platform);
    if (adapter === undefined || adapter.status().state !== 'running') {
      // QUE-3: back on the queue, never dropped; it runs when the adapter reports running again
      // (adapterStatusChanged), or when the next event for this lane arrives.
      lane.state = queue.putBack(lane.state, item);
      this.events.emit('queue:requeued', { session_key: lane.key, platform: item.payload.source.platform });
      return;
    }
    // Registered before the first await, so a /stop or /new arriving while the turn looks up its
    // session still finds it.
    const running = startingTurn();
    lane.running = running;
    this.track(
      executeTurn(this.deps, lane.key, item.payload, adapter, running)
        .catch((error: unknown) => this.reportFailure(lane, item.payload, adapter, error))
        .finally(() => {
          lane.running = null;
          const step = queue.finish(lane.state);
          lane.state = step.state;
          if (step.start !== null) this.launch(lane, step.start);
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
    await carryOutCommand(this.commandContext, lane, event, command, reply);
    this.events.emit('command:handled', { session_key: lane.key, command: command.name });
    // Wake-ups that survived the command (and anything put back) start right after it (QUE-2).
    const step = queue.resume(lane.state);
    lane.state = step.state;
    if (step.start !== null) this.launch(lane, step.start);
  }

  /** REC-4: every resume_pending session whose platform is connected continues once. */
  private async autoContinue(): Promise<string[]> {
    const continued: string[] = [];
    let cursor: string | null = null;
    do {
      const page = await this.options.store.listSessions({ limit: 500, cursor });
      for (const entry of page.entries) {
        if (!entry.resume_pending || entry.suspended || entry.origin === null) continue;
        if (!this.adapters.has(entry.origin.platform)) continue;
        const event: MessageEvent = {
          source: SessionSource.fromJSON(entry.origin),
          text: RESUME_NOTE,
          internal: true,
          received_at: new Date().toISOString(),
        };
        this.arrive(this.lane(entry.session_key), { kind: 'internal', payload: event });
        continued.push(entry.session_key);
      }
      cursor = page.nextCursor;
    } while (cursor !== null);
    return continued;
  }

  private reportFailure(lane: Lane, event: MessageEvent, adapter: PlatformAdapter, error: unknown): void {
    // The marker stays: a failure here (the store refused a write) is recovered like a crash.
    const why = error instanceof Error ? error.message : String(error);
    void adapter
      .send(event.source.chat_id, `Sorry, something went wrong: ${why.split('\n')[0]}`, {
        thread_id: event.source.thread_id,
        reply_to: null,
      })
      .catch(() => undefined);
    this.events.emit('turn:complete', {
      session_key: lane.key,
      session_id: lane.running?.sessionId ?? '',
      turn_id: lane.running?.turnId ?? '',
      outcome: 'failed',
      final_text: null,
    });
  }

  private lane(key: string): Lane {
    let lane = this.lanes.get(key);
    if (lane === undefined) {
      lane = { key, state: queue.emptyQueue(), running: null };
      this.lanes.set(key, lane);
    }
    return lane;
  }

  private track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined).finally(() => this.inFlight.delete(tracked));
    this.inFlight.add(tracked);
  }
}
