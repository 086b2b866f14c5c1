/**
 * The turn scheduler: runs each session's admissions in FIFO order, one turn at a time per session,
 * many sessions in parallel under a global limit (SPEC LOC-8), fencing every claim and settlement by
 * authority epoch and execution generation (REC-3).
 *
 * Each session's pump is an explicit state machine:
 *
 *   idle ──kick──▶ pumping ──permit + claim──▶ running ──settled──▶ pumping … ──nothing to claim──▶ idle
 *
 * A permit is taken BEFORE the claim: a claim marks the admission started, and an admission that
 * never started must stay replayable after a crash. Claims are group-committed (they resolve after a
 * durable commit), so a kick that arrives while a pump is claiming is remembered and the pump looks
 * again before it goes idle: a kick can never be lost.
 *
 * A turn settles once, durably, with its final messages and usage in the same commit (`job.settle`);
 * a turn that ends without settling itself (a crash of the runner) is settled here.
 */
import type { TranscriptMessage } from '../vocabulary.js';
import type {
  AdmissionRow,
  Claimed,
  LocalSessionRow,
  LocalSessionStore,
  SettleOutcome,
  StoredPrompt,
} from '../ports/local-store.js';
import type { UsageUpdate } from '../ports/session-store.js';
import type { Semaphore } from '../concurrency/semaphore.js';
import { TURN_TIMEOUT } from '../../runtime/runner.js';
import { NO_SPAN, SPAN, type TraceSpan, type TurnTracer } from '../../runtime/tracing.js';
import { GatewayError } from '../errors.js';
import { storageRetryMs, storageUnavailable, whenStored } from '../session/storage-wait.js';

/** How a turn ended, and what its settlement stores with it. */
export interface TurnJobResult {
  outcome: SettleOutcome;
  detail: string | null;
  /** The turn's final messages, stored in the settlement's transaction. */
  messages?: readonly TranscriptMessage[];
  usage?: UsageUpdate;
}

export interface TurnJob {
  session: LocalSessionRow;
  admission: AdmissionRow;
  epoch: number;
  generation: number;
  /** The user message the claim stored for this turn. */
  input: TranscriptMessage;
  /** Aborted by an interrupt: the turn must stop and settle as interrupted. */
  signal: AbortSignal;
  /**
   * Settles the turn durably (fenced by epoch and generation); false when it no longer owns the
   * admission, and then nothing of it was written. Call at most once.
   */
  settle(result: TurnJobResult): Promise<boolean>;
  /** REC-7: the turn's step boundaries, written durably under its fence (see LocalSessionStore). */
  steps: TurnSteps;
  /** REC-7: recovery resumed this turn after a crash; it goes on from its stored boundary. */
  resumed: boolean;
  /** The root span of this run of the turn (ended by the scheduler once it is settled). */
  trace?: TraceSpan;
}

/** The step records of one running turn; each rejects when the turn no longer owns its admission. */
export interface TurnSteps {
  toolStarted(toolCallId: string): Promise<void>;
  toolResult(messages: readonly TranscriptMessage[]): Promise<void>;
  prompt(prompt: StoredPrompt | null): Promise<void>;
  /** Issue 28: applies the session's queued steers to this turn (stored); the messages, in order. */
  steers(): Promise<TranscriptMessage[]>;
}

export interface SchedulerOptions {
  /** `limits.turn_timeout_s` in ms, counted from the turn's first claim; past it the turn is stopped. */
  turnTimeoutMs?: number;
  /** In a cluster (SCL-1): which sessions this instance may run (domain/cluster/member.ts). */
  ownership?: SessionOwnership;
  /** Turn traces (runtime/tracing.ts); absent: none. */
  tracer?: TurnTracer;
  /**
   * Claims may be answered before their commit is flushed (claimMayBeLazy in step-resume.ts: only
   * while a turn killed right after its claim would be resumed anyway). Absent: every claim durable.
   */
  lazyClaims?: boolean;
}

/**
 * A cluster member's answer to the scheduler: a session runs only on the instance holding its lease.
 * A kick of a session it does not hold goes to `elsewhere` (take the lease, or wake its owner).
 */
export interface SessionOwnership {
  owns(logicalId: string): boolean;
  elsewhere(logicalId: string): void;
  /** Takes the session's lease when no live instance holds it; true when this instance holds it now. */
  acquire(logicalId: string): Promise<boolean>;
  /**
   * False once the instance could not renew its leases in time, or no longer holds the session's:
   * no tool call starts (and the member stops the turn for the next owner).
   */
  sideEffectsAllowed(logicalId: string): boolean;
}

/**
 * A control refused because another instance of the cluster holds the session's lease; nothing ran.
 * `held_elsewhere` tells the relay (relayed-controls.ts) to route the call again.
 */
export function elsewhereBusy(logicalId: string): GatewayError {
  return new GatewayError(
    'session_busy',
    `session ${logicalId} is held by another gateway instance (a turn may be running there): repeat when it settles`,
    { session_id: logicalId, held_elsewhere: true },
  );
}

/** Why a cluster member stopped a turn: its lease is gone or about to be (SCL-1). */
export const LEASE_LOST = 'lease_lost';

export type TurnJobRunner = (job: TurnJob) => Promise<TurnJobResult>;

export interface SchedulerEvents extends Record<string, unknown> {
  'turn:claimed': { logical_id: string; admission_id: string; generation: number };
  'turn:settled': {
    logical_id: string;
    admission_id: string;
    generation: number;
    outcome: SettleOutcome;
    detail: string | null;
    /** False when the settlement was refused as stale (another epoch or generation owns it). */
    accepted: boolean;
  };
  'queue:blocked': { logical_id: string; admission_id: string };
  'queue:paused': { logical_id: string; reason: string };
  'queue:idle': { logical_id: string };
  /**
   * The store refused a claim or a settlement as unavailable (a full disk, say): the pump waits and
   * tries the same operation again, so the queue goes on by itself once storage is back.
   */
  'storage:waiting': {
    logical_id: string;
    operation: 'claim' | 'settle';
    error: string;
    retry_in_ms: number;
  };
  'storage:back': { logical_id: string; operation: 'claim' | 'settle' };
}

/** Where the scheduler publishes its lifecycle events (a TypedEmitter of a superset of them). */
export interface SchedulerEmit {
  emit<K extends keyof SchedulerEvents & string>(name: K, payload: SchedulerEvents[K]): void;
}

type PumpState =
  | { kind: 'idle' }
  /**
   * `kicked`: new work may have arrived while the pump was waiting for a permit or a claim.
   * `claiming`: the claim on its way to the store (a turn may be starting), null between claims.
   */
  | {
      kind: 'pumping';
      kicked: boolean;
      claiming: Promise<unknown> | null;
      resumed?: Claimed;
      /** The store refused the last claim as unavailable: how many times in a row, and why. */
      storageWait?: { attempt: number; error: string };
    }
  | {
      kind: 'running';
      admission_id: string;
      generation: number;
      abort: AbortController;
      done: Promise<void>;
      /**
       * The turn's settlement is committed (a viewer may already see it settled); what is left is
       * the runner's own ending. A control waits for `done` instead of finding the slot busy.
       */
      settled?: boolean;
    };

export type InterruptResult = 'interrupted' | 'stale_generation' | 'not_running';

export class TurnScheduler {
  private readonly pumps = new Map<string, PumpState>();
  /** Sessions whose slot a control holds (see control()): their pumps claim nothing until it ends. */
  private readonly held = new Map<string, Promise<void>>();
  private draining = false;

  constructor(
    private readonly store: LocalSessionStore,
    private readonly epoch: number,
    private readonly permits: Semaphore,
    private readonly runTurn: TurnJobRunner,
    private readonly events: SchedulerEmit,
    private readonly onError: (error: unknown, context: string) => void,
    private readonly options: SchedulerOptions = {},
  ) {}

  /**
   * REC-7: runs a turn recovery took over (resumeOrphan) as the session's next turn, then goes on
   * with its queue. Only at cold start, before anything of the session was kicked.
   */
  resume(claimed: Claimed): void {
    const logicalId = claimed.session.logical_id;
    if (this.draining || this.pumps.has(logicalId)) return;
    this.pumps.set(logicalId, { kind: 'pumping', kicked: false, claiming: null, resumed: claimed });
    this.pump(logicalId).catch((error: unknown) => {
      this.pumps.delete(logicalId);
      this.onError(error, `scheduler pump of ${logicalId}`);
    });
  }

  /** Makes sure the session's queue is being worked on. Cheap and idempotent. */
  kick(logicalId: string): void {
    if (this.draining) return;
    const ownership = this.options.ownership;
    if (ownership && !ownership.owns(logicalId)) {
      ownership.elsewhere(logicalId);
      return;
    }
    const state = this.pumps.get(logicalId) ?? { kind: 'idle' };
    if (state.kind === 'pumping') state.kicked = true;
    if (state.kind !== 'idle') return;
    this.pumps.set(logicalId, { kind: 'pumping', kicked: false, claiming: null });
    this.pump(logicalId).catch((error: unknown) => {
      this.pumps.delete(logicalId);
      this.onError(error, `scheduler pump of ${logicalId}`);
    });
  }

  /** Whether the session's turn slot is in use (a pump claiming or running, or an exclusive holder). */
  busy(logicalId: string): boolean {
    return this.pumps.has(logicalId) || this.held.has(logicalId);
  }

  /**
   * Runs `work` in the session's turn slot: after the running turn (and any turn already being
   * claimed) ends, with no turn claimed until it is done. Admissions that arrive meanwhile wait and
   * run after it, in order. Used by session.compress and checkpoint.restore.
   *
   * The slot is held (as control() holds it) BEFORE the lease is taken and before the wait: the
   * pump of the running turn then waits behind it when the turn ends instead of finding the queue
   * empty, going idle and letting a cluster member release the session's lease while `work` writes.
   */
  async exclusive<T>(logicalId: string, work: () => Promise<T>): Promise<T> {
    for (let held = this.held.get(logicalId); held; held = this.held.get(logicalId)) await held;
    let release!: () => void;
    this.held.set(logicalId, new Promise<void>((resolve) => (release = resolve)));
    let ours = true;
    try {
      if (this.options.ownership && !(await this.acquired(logicalId))) {
        ours = false;
        throw elsewhereBusy(logicalId);
      }
      for (;;) {
        const state = this.pumps.get(logicalId) ?? { kind: 'idle' };
        if (this.slotFreeOfTurns(state)) break;
        if (state.kind === 'running') await state.done;
        else await new Promise<void>((resolve) => setImmediate(resolve));
      }
      return await work();
    } finally {
      this.held.delete(logicalId);
      release();
      if (ours) this.kick(logicalId);
    }
  }

  /** The running turn of a session, if any. */
  running(logicalId: string): { admission_id: string; generation: number } | null {
    const state = this.pumps.get(logicalId);
    return state?.kind === 'running'
      ? { admission_id: state.admission_id, generation: state.generation }
      : null;
  }

  /**
   * Runs a control (reset, undo, retry) in the session's turn slot (LIN-2): only while no turn of
   * the session runs (a claim on its way is waited for, and busy only if it started a turn). While
   * `fn` (one store transaction) is on its way the slot is held: a pump of the session claims
   * nothing until it is done, and a second control is busy.
   * Afterwards the queue is kicked, so inputs accepted before or during the control go on. Returns
   * `busy` (and runs nothing) while a turn or another control holds the slot, and `elsewhere` (and
   * runs nothing) when another instance of a cluster holds the session's lease.
   */
  async control<T>(
    logicalId: string,
    fn: () => Promise<T>,
  ): Promise<{ kind: 'done'; value: T } | { kind: 'busy' } | { kind: 'elsewhere' }> {
    // A claim on its way is waited for: it starts a turn (busy) or finds the queue empty (free).
    // After every turn the pump claims once more; with a store that answers over the network that
    // claim is still out when a viewer, told the turn settled, sends its control, which must run.
    // Likewise a turn whose settlement is committed: a viewer told it settled (or a snapshot with no
    // pending admission) sends its control while the runner ends, and the control must run.
    for (;;) {
      const state = this.pumps.get(logicalId);
      if (state?.kind === 'running' && state.settled) {
        await state.done;
        continue;
      }
      if (state?.kind !== 'pumping' || state.claiming === null) break;
      await state.claiming.catch(() => undefined);
    }
    if (!this.slotFree(logicalId)) return { kind: 'busy' };
    let release!: () => void;
    this.held.set(logicalId, new Promise<void>((resolve) => (release = resolve)));
    let ours = true;
    try {
      // In a cluster a control runs only where the session's lease is (another instance may run a
      // turn). The slot is held first, so the pump that taking the lease kicks waits behind this
      // control instead of making it busy (and releasing the lease again once it finds nothing).
      if (this.options.ownership && !(await this.acquired(logicalId))) {
        ours = false;
        return { kind: 'elsewhere' };
      }
      // Taking the lease over may have resumed a turn a dead owner left (REC-7): that one goes first.
      const now = this.pumps.get(logicalId);
      if (now?.kind === 'running' || (now?.kind === 'pumping' && now.resumed !== undefined))
        return { kind: 'busy' };
      return { kind: 'done', value: await fn() };
    } finally {
      this.held.delete(logicalId);
      release();
      if (ours) this.kick(logicalId);
    }
  }

  /**
   * Free: no pump, or one still waiting for a permit, and no other exclusive holder of the slot.
   * A turn running or being claimed, or one recovery resumed (REC-7) and not yet running, holds it.
   */
  private slotFree(logicalId: string): boolean {
    return this.slotFreeOfTurns(this.pumps.get(logicalId) ?? { kind: 'idle' }) && !this.held.has(logicalId);
  }

  /** No turn of the pump runs, is being claimed, or was resumed by recovery and waits to run. */
  private slotFreeOfTurns(state: PumpState): boolean {
    return (
      state.kind === 'idle' || (state.kind === 'pumping' && !state.claiming && state.resumed === undefined)
    );
  }

  /** Whether this instance may touch the session's turn slot (always, outside a cluster). */
  private async acquired(logicalId: string): Promise<boolean> {
    const ownership = this.options.ownership;
    return !ownership || ownership.owns(logicalId) || ownership.acquire(logicalId);
  }

  /** LOC-12: interrupts the running turn, fenced by its execution generation. */
  interrupt(logicalId: string, generation: number): InterruptResult {
    const state = this.pumps.get(logicalId);
    if (state?.kind !== 'running') return 'not_running';
    if (state.generation !== generation) return 'stale_generation';
    state.abort.abort();
    return 'interrupted';
  }

  /**
   * SCL-1: stops the running turn of a session whose lease this instance lost (or is about to),
   * whatever its generation; its settlement is fenced by the lease and refused once it is gone.
   */
  interruptForLease(logicalId: string): boolean {
    const state = this.pumps.get(logicalId);
    if (state?.kind !== 'running') return false;
    state.abort.abort(LEASE_LOST);
    return true;
  }

  /** The sessions with a pump (claiming, running or waiting for a permit) or a held slot now. */
  active(): string[] {
    return [...new Set([...this.pumps.keys(), ...this.held.keys()])];
  }

  /**
   * REC-6: stops claiming, waits for running turns until `deadline` (epoch ms). Returns the
   * admissions still running then; they stay `running` in the store and become `unknown` at the next
   * start, never replayed.
   */
  async drain(deadline: number): Promise<string[]> {
    this.draining = true;
    const running = [...this.pumps.values()].filter((s) => s.kind === 'running');
    const remaining = deadline - Date.now();
    if (running.length > 0 && remaining > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(running.map((s) => s.done)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, remaining))),
      ]);
      clearTimeout(timer);
    }
    return [...this.pumps.values()].flatMap((s) => (s.kind === 'running' ? [s.admission_id] : []));
  }

  private async pump(logicalId: string): Promise<void> {
    for (;;) {
      if (this.draining) {
        this.pumps.delete(logicalId);
        return;
      }
      // A holder of the slot goes first, except before a turn recovery resumed: that one runs first
      // (as step() lets it), for the holder may be what took the lease and so resumed it, and it
      // waits for that turn to end (exclusive()); waiting for each other, neither would ever run.
      const held = this.held.get(logicalId);
      const waiting = this.pumps.get(logicalId);
      if (held && !(waiting?.kind === 'pumping' && waiting.resumed !== undefined)) {
        await held;
        continue;
      }
      const release = await this.permits.acquire();
      let next: 'again' | 'stop' | 'wait';
      try {
        next = await this.step(logicalId);
      } finally {
        release();
      }
      if (next === 'stop') return;
      const state = this.pumps.get(logicalId);
      if (next === 'wait' && state?.kind === 'pumping' && state.storageWait) {
        const retryInMs = storageRetryMs(state.storageWait.attempt);
        this.events.emit('storage:waiting', {
          logical_id: logicalId,
          operation: 'claim',
          error: state.storageWait.error,
          retry_in_ms: retryInMs,
        });
        await new Promise<void>((resolve) => setTimeout(resolve, retryInMs));
      }
    }
  }

  /**
   * One claim under a permit, and the turn it starts. 'again' while there may be more to claim;
   * 'wait' when the store could not be written (the pump waits, then claims again).
   */
  private async step(logicalId: string): Promise<'again' | 'stop' | 'wait'> {
    const state = this.pumps.get(logicalId);
    if (this.draining || state?.kind !== 'pumping') {
      this.pumps.delete(logicalId);
      return 'stop';
    }
    // A control took the slot while this pump waited for its permit: wait for it (permit released).
    if (this.held.has(logicalId) && state.resumed === undefined) return 'again';
    state.kicked = false;
    const resumed = state.resumed;
    delete state.resumed;
    const claimStarted = Date.now();
    const claiming = resumed
      ? Promise.resolve(resumed)
      : this.store.claimNext(logicalId, this.epoch, { lazy: this.options.lazyClaims === true });
    state.claiming = claiming;
    let claim: Awaited<typeof claiming>;
    try {
      claim = await claiming;
    } catch (error) {
      state.claiming = null;
      if (!storageUnavailable(error)) throw error;
      // Nothing was claimed: the pump waits (without its permit) and claims again.
      state.storageWait = { attempt: (state.storageWait?.attempt ?? -1) + 1, error: error.message };
      return 'wait';
    }
    state.claiming = null;
    if (state.storageWait) {
      delete state.storageWait;
      this.events.emit('storage:back', { logical_id: logicalId, operation: 'claim' });
    }
    switch (claim.kind) {
      case 'claimed':
        await this.execute(logicalId, claim, resumed !== undefined, claimStarted);
        return 'again';
      case 'blocked':
        this.pumps.delete(logicalId);
        this.events.emit('queue:blocked', { logical_id: logicalId, admission_id: claim.admission_id });
        return 'stop';
      case 'paused':
        this.pumps.delete(logicalId);
        this.events.emit('queue:paused', { logical_id: logicalId, reason: claim.reason });
        return 'stop';
      case 'not_owner':
        // The lease went elsewhere while this pump waited: the new owner runs the queue.
        this.pumps.delete(logicalId);
        return 'stop';
      case 'busy':
      case 'idle':
        if (state.kicked && !this.draining) return 'again';
        this.pumps.delete(logicalId);
        this.events.emit('queue:idle', { logical_id: logicalId });
        return 'stop';
    }
  }

  private async execute(
    logicalId: string,
    claim: Claimed,
    resumed: boolean,
    claimStarted: number,
  ): Promise<void> {
    const { session, admission, generation, input } = claim;
    const trace = this.traceTurn(claim, resumed, claimStarted);
    const abort = new AbortController();
    const timer = this.turnTimer(admission, abort);
    let finish!: () => void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    this.pumps.set(logicalId, {
      kind: 'running',
      admission_id: admission.admission_id,
      generation,
      abort,
      done,
    });
    this.events.emit('turn:claimed', {
      logical_id: logicalId,
      admission_id: admission.admission_id,
      generation,
    });
    const fence = { admission_id: admission.admission_id, epoch: this.epoch, generation };
    const owned = (accepted: boolean): void => {
      if (!accepted) throw new Error('the turn no longer owns its admission (stale generation)');
    };
    const ownership = this.options.ownership;
    const steps: TurnSteps = {
      toolStarted: async (id) => {
        if (ownership && !ownership.sideEffectsAllowed(logicalId))
          throw new Error(
            "this instance no longer holds the session's lease, or could not renew it in time: no tool call starts",
          );
        owned(await this.store.markToolStarted(fence, id));
      },
      toolResult: async (messages) => owned(await this.store.recordToolResult(fence, messages)),
      prompt: async (prompt) => owned(await this.store.recordPrompt(fence, prompt)),
      steers: async () => {
        // A read first: the commit that applies steers is paid only when one is queued.
        const pending = await this.store.unsettled(logicalId);
        if (!pending.some((a) => a.state === 'queued' && a.mode === 'steer')) return [];
        const applied = await this.store.applySteers(fence);
        owned(applied !== null);
        return applied ?? [];
      },
    };
    let settled: { result: TurnJobResult; accepted: boolean } | null = null;
    // SCL-1: a turn stopped because this instance's lease is going is not settled here: it stays
    // `running` for the instance that takes the session over, which resumes it at its last step or
    // marks it unknown (REC-7), exactly as after a kill. Settling it `interrupted` would end a turn
    // nobody interrupted.
    const commit = async (result: TurnJobResult): Promise<{ result: TurnJobResult; accepted: boolean }> => {
      if (abort.signal.reason === LEASE_LOST)
        return { result: { ...result, detail: LEASE_LOST }, accepted: false };
      const span = trace.child(SPAN.settle, { 'gatehouse.turn.outcome': result.outcome });
      try {
        const accepted = await this.settleWhenStored(logicalId, { ...fence, ...result });
        span.set({ 'gatehouse.settle.accepted': accepted });
        const state = this.pumps.get(logicalId);
        if (accepted && state?.kind === 'running' && state.admission_id === admission.admission_id)
          state.settled = true;
        return { result, accepted };
      } finally {
        span.end();
      }
    };
    const settle = async (result: TurnJobResult): Promise<boolean> => {
      if (settled) throw new Error(`turn ${admission.admission_id} settled twice`);
      settled = await commit(result);
      return settled.accepted;
    };
    try {
      let result: TurnJobResult;
      try {
        result = await this.runTurn({
          session,
          admission,
          epoch: this.epoch,
          generation,
          input,
          signal: abort.signal,
          settle,
          steps,
          resumed,
          trace,
        });
      } catch (error) {
        this.onError(error, `turn ${admission.admission_id}`);
        result = { outcome: 'failed', detail: 'internal error while running the turn' };
      }
      // A runner that returned without settling (or whose settlement failed) is settled here.
      settled ??= await commit(result);
      this.events.emit('turn:settled', {
        logical_id: logicalId,
        admission_id: admission.admission_id,
        generation,
        outcome: settled.result.outcome,
        detail: settled.result.detail,
        accepted: settled.accepted,
      });
      trace.set({
        'gatehouse.turn.outcome': settled.result.outcome,
        'gatehouse.settle.accepted': settled.accepted,
      });
    } finally {
      trace.end();
      clearTimeout(timer);
      this.pumps.set(logicalId, { kind: 'pumping', kicked: false, claiming: null });
      finish();
    }
  }

  /**
   * Settles a turn, waiting for the store while it refuses the write as unavailable (issue 26 item
   * 5): the settlement is one fenced transaction, so trying it again is safe, and a turn's end is
   * never lost to a full disk that is freed later. A drain stops the waiting (the turn then stays
   * `running`, and the next start recovers it as after a crash).
   */
  private settleWhenStored(
    logicalId: string,
    settlement: Parameters<LocalSessionStore['settle']>[0],
  ): Promise<boolean> {
    return whenStored(() => this.store.settle(settlement), {
      waiting: (error, _attempt, retryInMs) =>
        this.events.emit('storage:waiting', {
          logical_id: logicalId,
          operation: 'settle',
          error,
          retry_in_ms: retryInMs,
        }),
      back: () => this.events.emit('storage:back', { logical_id: logicalId, operation: 'settle' }),
      stop: () => this.draining,
    });
  }

  /**
   * The root span of this run of a claimed turn, with its admission (the wait in the queue, a first
   * run only) and its claim; a resumed run links to the run a crash interrupted.
   */
  private traceTurn(claim: Claimed, resumed: boolean, claimStarted: number): TraceSpan {
    const tracer = this.options.tracer;
    if (!tracer) return NO_SPAN;
    const { admission, generation } = claim;
    const parsed = Date.parse(admission.admitted_at);
    const admitted = Number.isFinite(parsed) ? parsed : claimStarted;
    const span = tracer.turn(
      { turnId: admission.admission_id, run: admission.resumes },
      {
        'gatehouse.engine': 'local',
        'gatehouse.session.id': claim.session.logical_id,
        'gen_ai.conversation.id': claim.session.logical_id,
        'gatehouse.admission.id': admission.admission_id,
        'gatehouse.turn.generation': generation,
        'gatehouse.turn.resumed': resumed,
      },
      resumed ? {} : { startTime: Math.min(admitted, claimStarted) },
    );
    if (!resumed)
      span
        .child(SPAN.admission, { 'gatehouse.admission.id': admission.admission_id }, { startTime: admitted })
        .end(Math.max(admitted, claimStarted));
    span.child(SPAN.claim, { 'gatehouse.turn.generation': generation }, { startTime: claimStarted }).end();
    return span;
  }

  /** `limits.turn_timeout_s`: aborts the turn (reason turn_timeout) once it has run that long. */
  private turnTimer(admission: AdmissionRow, abort: AbortController): NodeJS.Timeout | undefined {
    const limit = this.options.turnTimeoutMs;
    if (limit === undefined) return undefined;
    const started = admission.started_at === null ? Date.now() : Date.parse(admission.started_at);
    const timer = setTimeout(() => abort.abort(TURN_TIMEOUT), Math.max(0, started + limit - Date.now()));
    timer.unref();
    return timer;
  }
}
