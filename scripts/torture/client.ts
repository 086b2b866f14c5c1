/**
 * A torture client behaves like a real one: every call it makes carries an idempotency key
 * (request_id for creations, submission_id for inputs), and every call that was not acknowledged is
 * retried, unchanged, after the next reconnect. What the gateway acknowledged goes into the ledger
 * the checks read at the end.
 */
import {
  ConnectionClosedError,
  RpcCallError,
  type GatewayClient,
} from '../../src/surfaces/client/rpc-client.js';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Rng } from './rng.js';

export type Op =
  | { kind: 'create'; request_id: string; cwd: string }
  | { kind: 'submit'; request_id: string; submission_id: string; text: string; tool: boolean }
  | { kind: 'reset'; request_id: string; reset_id: string }
  | { kind: 'compress'; request_id: string };

export interface AckedAdmission {
  admission_id: string;
  session_id: string;
  submission_id: string;
  tool: boolean;
}

/** Everything acknowledged to any client, and every inconsistency seen on the wire. */
export class Ledger {
  /** request_id → session_id, from the first acknowledgement. */
  readonly sessions = new Map<string, { session_id: string; cwd: string }>();
  /** submission_id → what its first acknowledgement said. */
  readonly admissions = new Map<string, AckedAdmission>();
  /** Sessions whose receipts the harness tampered with: request_id → tamper kind. */
  readonly tampered = new Map<string, string>();
  /** Submissions refused because their session is paused (never acknowledged). */
  refused = 0;
  retries = 0;
  /** session.reset calls acknowledged (each request_id once), by session id. */
  readonly resets = new Map<string, number>();
  readonly resetIds = new Set<string>();
  /** session.compress calls that answered `compressed: true`. */
  compressions = 0;
  readonly violations: string[] = [];

  ackCreation(requestId: string, sessionId: string, cwd: string): void {
    const known = this.sessions.get(requestId);
    if (known && known.session_id !== sessionId) {
      this.violations.push(
        `request_id ${requestId} produced two sessions: ${known.session_id}, ${sessionId}`,
      );
    }
    if (!known) this.sessions.set(requestId, { session_id: sessionId, cwd });
  }

  ackAdmission(ack: AckedAdmission): void {
    const known = this.admissions.get(ack.submission_id);
    if (known && known.admission_id !== ack.admission_id) {
      this.violations.push(
        `submission_id ${ack.submission_id} produced two admissions: ${known.admission_id}, ${ack.admission_id}`,
      );
    }
    if (!known) this.admissions.set(ack.submission_id, ack);
  }
}

/** Reasons that mean "the daemon is going away": keep the call and retry it after reconnecting. */
const TRANSIENT = new Set(['runtime_draining', 'storage_unavailable', 'internal_error']);
/** Reasons that mean "not now": the call stays pending for a later round (see `run`). */
const RETRY_LATER = new Set(['session_busy', 'owner_unreachable']);

export class TortureClient {
  /** Calls made but not yet acknowledged, in the order they were first made. */
  readonly pending: Op[] = [];
  private sessionCounter = 0;
  private submitCounter = 0;
  private resetCounter = 0;
  /** Why the last `run` stopped before its pending calls were all acknowledged (for the log). */
  stoppedAt: string | null = null;

  constructor(
    readonly name: string,
    private readonly ledger: Ledger,
    private readonly cwdFor: (requestId: string) => string,
    /**
     * The run's log: a call still unanswered after `noteMs` is noted there, and again every
     * `noteMs`, so a run that outlives its bound shows the call it waited on.
     */
    private readonly watch: { log: (line: string) => void; noteMs: number } | null = null,
  ) {}

  /** Plans this iteration's new calls (after the retries) and queues them as pending. */
  plan(
    rng: Rng,
    wantCreate: boolean,
    submits: number,
    texts: (id: string, rng: Rng) => { text: string; tool: boolean },
    /** An iteration armed at a reset or compression fault point makes sure the workload gets there. */
    force: { reset?: boolean; compress?: boolean } = {},
  ) {
    const mine = [...this.ledger.sessions.keys()].filter(
      (r) => r.startsWith(`${this.name}-`) && !this.ledger.tampered.has(r),
    );
    if (wantCreate || mine.length === 0) {
      const request_id = `${this.name}-s${++this.sessionCounter}`;
      this.pending.push({ kind: 'create', request_id, cwd: this.cwdFor(request_id) });
      mine.push(request_id);
    }
    // Now and then a session is reset between inputs (LIN-2): its history must stay whole.
    if (force.reset || rng.next() < 0.25) {
      const reset_id = `${this.name}-r${++this.resetCounter}`;
      this.pending.push({ kind: 'reset', request_id: rng.pick(mine), reset_id });
    }
    // And now and then compressed (LIN-1), between inputs or while one of its turns runs.
    const compressAt = force.compress ? submits : rng.next() < 0.35 ? rng.int(0, submits) : -1;
    // Forced: the session with the most inputs so far, after this round's (the most to compress).
    const busiest = (): string =>
      [...mine].sort((a, b) => this.inputsOf(b) - this.inputsOf(a))[0] ?? rng.pick(mine);
    // Forced: this round's inputs all go to that session, so it has something to compress.
    const target = force.compress ? busiest() : null;
    for (let i = 0; i <= submits; i++) {
      if (i === compressAt) this.pending.push({ kind: 'compress', request_id: target ?? rng.pick(mine) });
      if (i === submits) break;
      const submission_id = `${this.name}-m${++this.submitCounter}`;
      const request_id = target ?? rng.pick(mine);
      this.pending.push({ kind: 'submit', request_id, submission_id, ...texts(submission_id, rng) });
    }
  }

  /** Inputs planned for a session so far (acknowledged or pending). */
  private inputsOf(requestId: string): number {
    const session = this.ledger.sessions.get(requestId)?.session_id;
    let n = this.pending.filter((op) => op.kind === 'submit' && op.request_id === requestId).length;
    for (const a of this.ledger.admissions.values()) if (a.session_id === session) n++;
    return n;
  }

  /**
   * Performs pending calls in order until all are acknowledged or the connection dies. A submit
   * whose session is not created yet waits for a later round.
   */
  async run(client: GatewayClient): Promise<void> {
    this.stoppedAt = null;
    for (const op of [...this.pending]) {
      if (op.kind !== 'create' && !this.ledger.sessions.has(op.request_id)) continue;
      try {
        await this.watched(op, this.perform(client, op));
        this.pending.splice(this.pending.indexOf(op), 1);
      } catch (error) {
        this.stoppedAt = `${op.kind} ${op.request_id}: ${error instanceof RpcCallError ? error.reason : String(error)}`;
        if (error instanceof ConnectionClosedError) return;
        if (error instanceof RpcCallError && TRANSIENT.has(error.reason)) return;
        // A reset that found the session busy for its whole wait (in a cluster, a killed owner holds
        // the lease until it expires), or a control relayed to an owner that did not answer in time
        // (owner_unreachable: killed, or just restarted under a new epoch), stays pending for the
        // next round, as the error tells a client to do; the drain still requires it.
        if (error instanceof RpcCallError && RETRY_LATER.has(error.reason)) return;
        if (error instanceof RpcCallError && error.reason === 'permission_denied' && op.kind !== 'create') {
          // The session is paused (a tampered receipt): a real client gives up on it.
          this.ledger.refused++;
          this.pending.splice(this.pending.indexOf(op), 1);
          continue;
        }
        if (!client.closed) {
          this.ledger.violations.push(`${this.name} ${op.kind}: unexpected ${String(error)}`);
          this.pending.splice(this.pending.indexOf(op), 1);
        }
        return;
      }
    }
  }

  /** `call`, noted in the run's log for as long as it stays unanswered past `watch.noteMs`. */
  private async watched(op: Op, call: Promise<void>): Promise<void> {
    if (!this.watch) return call;
    const { log, noteMs } = this.watch;
    const started = Date.now();
    const timer = setInterval(() => {
      const waited = ((Date.now() - started) / 1000).toFixed(1);
      log(`${this.name} ${op.kind} ${op.request_id}: no answer after ${waited} s`);
    }, noteMs);
    try {
      await call;
    } finally {
      clearInterval(timer);
    }
  }

  private async perform(client: GatewayClient, op: Op): Promise<void> {
    if (op.kind === 'create') {
      const created = await client.call<{ session_id: string }>('session.create', {
        request_id: op.request_id,
        cwd: op.cwd,
      });
      this.ledger.ackCreation(op.request_id, created.session_id, op.cwd);
      return;
    }
    const session = this.ledger.sessions.get(op.request_id)!;
    if (op.kind === 'reset') return this.reset(client, session.session_id, op.reset_id);
    if (op.kind === 'compress') {
      // Waits for the session's turn slot; repeated after a lost answer, it finds less to do.
      const done = await client.call<{ compressed: boolean }>('session.compress', {
        session_id: session.session_id,
      });
      if (done.compressed) this.ledger.compressions++;
      return;
    }
    const ack = await client.call<{ admission_id: string; duplicate: boolean }>('prompt.submit', {
      session_id: session.session_id,
      submission_id: op.submission_id,
      text: op.text,
    });
    if (ack.duplicate) this.ledger.retries++;
    this.ledger.ackAdmission({
      admission_id: ack.admission_id,
      session_id: session.session_id,
      submission_id: op.submission_id,
      tool: op.tool,
    });
  }

  /** A reset waits for the session's turn slot: session_busy is asked again shortly, as a client would. */
  private async reset(client: GatewayClient, sessionId: string, resetId: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        const done = await client.call<{ duplicate: boolean }>('session.reset', {
          session_id: sessionId,
          request_id: resetId,
        });
        // A repeat may be the first answer this reset gets (the daemon died after committing it).
        if (done.duplicate) this.ledger.retries++;
        if (!this.ledger.resetIds.has(resetId)) {
          this.ledger.resetIds.add(resetId);
          this.ledger.resets.set(sessionId, (this.ledger.resets.get(sessionId) ?? 0) + 1);
        }
        return;
      } catch (error) {
        if (!(error instanceof RpcCallError && error.reason === 'session_busy') || attempt >= 400)
          throw error;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
  }
}

/**
 * The run's clients (`c0`, `c1`, …), each session in a directory of its own under `work`: every
 * tool execution appends its marker to `ran.log` there, and `ranLines` reads them all back.
 */
export function workloadClients(
  work: string,
  ledger: Ledger,
  count: number,
  /** The run's log, where a call unanswered for 5 s is noted (see TortureClient). */
  log?: (line: string) => void,
): { clients: TortureClient[]; ranLines: () => string[] } {
  const cwds: string[] = [];
  const cwdFor = (requestId: string): string => {
    const dir = join(work, requestId);
    mkdirSync(dir, { recursive: true });
    cwds.push(dir);
    return dir;
  };
  return {
    clients: Array.from(
      { length: count },
      (_, i) => new TortureClient(`c${i}`, ledger, cwdFor, log ? { log, noteMs: 5_000 } : null),
    ),
    ranLines: () =>
      cwds.flatMap((dir) => {
        const file = join(dir, 'ran.log');
        return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
      }),
  };
}
