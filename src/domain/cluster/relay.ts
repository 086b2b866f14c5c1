/**
 * The control relay of a cluster (SCL-1, issue 14). A prompt answer or an interrupt must reach the
 * running turn, which lives in the memory of the instance holding the session's lease. The instance
 * a client called authorizes the call with the caller's principal, then either runs it here (the
 * turn runs here, or no live instance holds the lease) or forwards it to the lease owner: a request
 * row plus a wake-up (domain/ports/control-relay.ts). The owner claims it once, runs it through the same
 * code path as a local call (which checks the carried principal again) and writes the answer —
 * a result or a refusal with its data.reason — which the sender hands to its client unchanged.
 * An owner that does not answer within the relay's timeout is `owner_unreachable` (retryable).
 *
 * The decision (routeControl) is pure; ControlRelay does the I/O.
 */
import type { Principal } from '../auth/principal.js';
import { makePrincipal } from '../auth/principal.js';
import { GatewayError, type GatewayReason } from '../errors.js';
import type { LeaseHolder } from './lease.js';
import type {
  ClaimedControlRequest,
  ControlNote,
  ControlRelayStore,
  ControlRequestState,
} from '../ports/control-relay.js';

/**
 * The calls the relay carries. `session.prompts` reads the open prompts for a snapshot; the session
 * controls (reset … session.model, checkpoint.restore) run in the session's turn slot, on the lease owner.
 */
export const RELAYED_KINDS = [
  'approval.respond',
  'clarify.respond',
  'session.interrupt',
  'session.prompts',
  'session.reset',
  'session.undo',
  'session.retry',
  'session.compress',
  'session.model',
  'checkpoint.restore',
] as const;
export type RelayedKind = (typeof RELAYED_KINDS)[number];

export type ControlRoute = { kind: 'local' } | { kind: 'forward'; owner: LeaseHolder };

/**
 * Where a control of a session runs: here when its turn runs here, or when no other live instance
 * holds its lease (the local call then answers exactly as the owner would: nothing runs, no prompt).
 */
export function routeControl(facts: {
  runsHere: boolean;
  self: LeaseHolder;
  owner: LeaseHolder | null;
}): ControlRoute {
  if (facts.runsHere || facts.owner === null || facts.owner.epoch === facts.self.epoch)
    return { kind: 'local' };
  return { kind: 'forward', owner: facts.owner };
}

/** Runs a relayed call on the owner, exactly as the local call would (principal null: session.prompts). */
export type RelayExecutor = (
  kind: RelayedKind,
  principal: Principal | null,
  params: Record<string, unknown>,
) => Promise<unknown>;

export interface RelayLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

export interface ControlRelayOptions {
  store: ControlRelayStore;
  execute: RelayExecutor;
  log: RelayLog;
  /** How long a sender waits for the owner's answer (and the owner may still start it). */
  timeoutMs?: number;
  /** Forwarded requests waiting for an answer at once, at most; beyond, owner_unreachable at once. */
  maxInFlight?: number;
}

export const RELAY_TIMEOUT_MS = 10_000;
/** How long a snapshot waits for the owner's open prompts before it shows none (docs/cluster.md). */
export const PROMPTS_TIMEOUT_MS = 1_000;
/**
 * The owner starts a request only before its deadline; its sender waits this much longer for the
 * answer, so a call started at the last moment is still answered rather than reported unreachable.
 */
const ANSWER_GRACE_MS = 2_000;
/**
 * A call its owner started (claimed) is waited for past the deadline while the owner still holds the
 * session's lease — session.compress waits for a running turn, checkpoint.restore for a human — but
 * never longer than this from its sending.
 */
export const STARTED_WAIT_MAX_MS = 3_600_000;
const MAX_IN_FLIGHT = 256;
const CLAIM_BATCH = 50;
/** Expired rows are deleted this long after their expiry (a late answer is read before that). */
const PRUNE_GRACE_S = 60;

/** What crosses the database: the answer of a request. */
type Answer =
  { ok: unknown } | { error: { reason: GatewayReason; message: string; details?: Record<string, unknown> } };

interface Waiter {
  settle(answer: string | null): void;
  /** Looks again (finally) in `ms`: the owner started the call and may still answer it. */
  again(ms: number): void;
  readonly sentAt: number;
  /** The owner was seen without the session's lease once: the next final look is the last. */
  lastLook: boolean;
}

function unreachable(message: string, owner?: LeaseHolder): GatewayError {
  return new GatewayError('owner_unreachable', message, {
    retryable: true,
    ...(owner ? { owner_instance: owner.instance_id, owner_epoch: owner.epoch } : {}),
  });
}

export class ControlRelay {
  private readonly waiting = new Map<number, Waiter>();
  /** Forwarded requests being written (not yet in `waiting`). */
  private sending = 0;
  private unsubscribe: (() => void) | null = null;
  private draining: Promise<void> | null = null;
  private again = false;
  private readonly timeoutMs: number;
  private readonly maxInFlight: number;

  constructor(private readonly options: ControlRelayOptions) {
    this.timeoutMs = options.timeoutMs ?? RELAY_TIMEOUT_MS;
    this.maxInFlight = options.maxInFlight ?? MAX_IN_FLIGHT;
  }

  get holder(): LeaseHolder {
    return this.options.store.holder;
  }

  /** Forwarded requests waiting now (bounded by maxInFlight). */
  get inFlight(): number {
    return this.waiting.size + this.sending;
  }

  start(): void {
    this.unsubscribe ??= this.options.store.subscribe(
      (note) => this.noted(note),
      () => {
        // Notes may have been lost: look for requests, and re-read every answer awaited.
        this.serve();
        for (const id of this.waiting.keys()) void this.lookUp(id);
      },
    );
    this.serve();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    for (const waiter of [...this.waiting.values()]) waiter.settle(null);
  }

  /** Where a control of `logicalId` runs (runsHere: its turn runs on this instance). */
  async route(logicalId: string, runsHere: boolean): Promise<ControlRoute> {
    if (runsHere) return { kind: 'local' };
    const owner = await this.options.store.sessionOwner(logicalId);
    return routeControl({ runsHere, self: this.holder, owner });
  }

  /** Sends a call to the owner and answers with its result, or throws its refusal as it was. */
  async forward(
    owner: LeaseHolder,
    kind: RelayedKind,
    logicalId: string,
    principal: Principal | null,
    params: Record<string, unknown>,
    /** A read that has a fallback waits less (session.prompts); default: the relay's timeout. */
    timeoutMs = this.timeoutMs,
  ): Promise<unknown> {
    if (this.inFlight >= this.maxInFlight)
      throw unreachable(`too many controls are being relayed (${this.maxInFlight}); repeat shortly`, owner);
    const { store } = this.options;
    const body = JSON.stringify({ principal, params });
    this.sending++;
    let id: number;
    try {
      id = await store.send({ target: owner, logical_id: logicalId, kind, body, ttlMs: timeoutMs });
    } finally {
      this.sending--;
    }
    const answer = await new Promise<string | null>((resolve) => {
      let timer: NodeJS.Timeout;
      const arm = (ms: number) => {
        timer = setTimeout(() => void this.lookUp(id, true), ms);
        timer.unref();
      };
      arm(timeoutMs + ANSWER_GRACE_MS);
      this.waiting.set(id, {
        settle: (value) => {
          clearTimeout(timer);
          this.waiting.delete(id);
          resolve(value);
        },
        again: arm,
        sentAt: Date.now(),
        lastLook: false,
      });
      // The answer may have come before the waiter was registered.
      void this.lookUp(id);
    });
    await store.forget(id).catch(() => undefined);
    if (answer === null)
      throw unreachable(
        `the instance running session ${logicalId} did not answer in ${timeoutMs} ms; repeat the call`,
        owner,
      );
    const parsed = JSON.parse(answer) as Answer;
    if ('error' in parsed)
      throw new GatewayError(parsed.error.reason, parsed.error.message, parsed.error.details);
    return parsed.ok;
  }

  private noted(note: ControlNote): void {
    if (note.kind === 'request') this.serve();
    else void this.lookUp(note.id);
  }

  /**
   * Reads an awaited answer. `final`: the deadline passed. An unstarted call never starts now, so
   * no answer means none; a started one is waited for while its owner holds the session's lease
   * (once more, for an answer on its way, after the owner gave the lease back).
   */
  private async lookUp(id: number, final = false): Promise<void> {
    const waiter = this.waiting.get(id);
    if (!waiter) return;
    if (final) return this.finalLook(id, waiter);
    let answer: string | null = null;
    try {
      answer = await this.options.store.readAnswer(id);
    } catch (error) {
      this.options.log.warn({ err: error, request: id }, 'relay: could not read an answer');
    }
    if (answer !== null) waiter.settle(answer);
  }

  private async finalLook(id: number, waiter: Waiter): Promise<void> {
    let state: ControlRequestState | null = null;
    try {
      state = await this.options.store.requestState(id);
    } catch (error) {
      this.options.log.warn({ err: error, request: id }, 'relay: could not read an answer');
    }
    if (state?.answer != null) return waiter.settle(state.answer);
    const started = state?.claimed === true && Date.now() - waiter.sentAt < STARTED_WAIT_MAX_MS;
    if (started && (state!.target_holds_lease || !waiter.lastLook)) {
      waiter.lastLook = !state!.target_holds_lease;
      return waiter.again(ANSWER_GRACE_MS);
    }
    waiter.settle(null);
  }

  /** Claims and runs the requests addressed here; one pass at a time, again when woken meanwhile. */
  private serve(): void {
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = this.serveAll()
      .catch((error: unknown) => this.options.log.warn({ err: error }, 'relay: serving requests failed'))
      .finally(() => {
        this.draining = null;
        if (this.again && this.unsubscribe) {
          this.again = false;
          this.serve();
        }
      });
  }

  private async serveAll(): Promise<void> {
    const { store } = this.options;
    for (;;) {
      const claimed = await store.claim(CLAIM_BATCH);
      // Each runs on its own, and the pass does not wait for them: a prompt answer never waits
      // behind another session's interrupt, nor behind a long control (a compression waiting for a
      // running turn, a restore waiting for its approval, whose answer may be the next request).
      for (const request of claimed)
        this.run(request).catch((error: unknown) =>
          this.options.log.warn({ err: error, request: request.id }, 'relay: could not answer a request'),
        );
      if (claimed.length < CLAIM_BATCH) break;
    }
    await store.prune(PRUNE_GRACE_S);
  }

  private async run(request: ClaimedControlRequest): Promise<void> {
    const answer = JSON.stringify(await this.execute(request));
    await this.options.store.answer(request, answer);
  }

  private async execute(request: ClaimedControlRequest): Promise<Answer> {
    try {
      if (!(RELAYED_KINDS as readonly string[]).includes(request.kind))
        throw new GatewayError('invalid_params', `unknown relayed control ${request.kind}`);
      const body = JSON.parse(request.body) as {
        principal: Principal | null;
        params: Record<string, unknown>;
      };
      const p = body.principal;
      const principal = p && makePrincipal(p.subject, p.provider, p.profile, p.capabilities, p.sessions);
      return { ok: await this.options.execute(request.kind as RelayedKind, principal, body.params) };
    } catch (error) {
      if (error instanceof GatewayError)
        return {
          error: {
            reason: error.reason,
            message: error.message,
            ...(error.details ? { details: error.details } : {}),
          },
        };
      this.options.log.warn(
        { err: error, request: request.id, kind: request.kind },
        'relay: a control failed',
      );
      return {
        error: { reason: 'owner_unreachable', message: 'the instance running the session failed the call' },
      };
    }
  }
}
