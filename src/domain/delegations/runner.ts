/**
 * The delegation runner (issue 28, docs/scheduling.md "Background delegations"): carries each open
 * delegation one step on, at each tick and whenever a turn settles.
 *
 *   starting ──create child, admit task (derived ids)──▶ running ──child's task ended──▶ result
 *   admitted into the parent (`delegation:<id>`) ──▶ reported
 *
 * Every call is idempotent by its derived id, and the row moves only after the call it records, so a
 * crash anywhere repeats calls that answer what they answered before: the child is created once, its
 * task admitted once, and its result admitted into the parent once. Steps of one delegation (and a
 * stop) run one at a time in this process; in a cluster one instance runs the delegations (mayRun).
 */
import { Ticker } from '../concurrency/ticker.js';
import { GatewayError } from '../errors.js';
import { TypedEmitter } from '../events/typed-emitter.js';
import type { CreateSessionParams } from '../local/launch-params.js';
import type { Principal } from '../auth/principal.js';
import type { DelegationRow, DelegationStore } from '../ports/delegation-store.js';
import {
  childRequestId,
  ownerPrincipal,
  resultSubmissionId,
  resultText,
  taskSubmissionId,
} from './delegation.js';

export interface DelegationEvents extends Record<string, unknown> {
  'delegation:started': { delegation_id: string; parent_id: string; child_id: string };
  'delegation:reported': {
    delegation_id: string;
    parent_id: string;
    outcome: string;
    result_admission_id: string | null;
  };
  'delegation:stopped': { delegation_id: string; parent_id: string; detail: string };
}

/** What the runner needs of the local sessions. */
export interface DelegationSessions {
  /** Creates the child (idempotent by the request id); its session id. */
  /**
   * Creates the child session; its own MCP servers (the parent's, stored without their env and
   * header values) take the values the parent's are given in this daemon's memory.
   */
  createChild(
    principal: Principal,
    params: CreateSessionParams & { request_id: string },
    parentId: string,
  ): Promise<string>;
  /** Admits text into a session (idempotent by the submission id); the admission id. */
  submit(principal: Principal, sessionId: string, submissionId: string, text: string): Promise<string>;
  /** The admission's state and detail, or null when it is gone. */
  admission(admissionId: string): Promise<{ state: string; detail: string | null } | null>;
  /** The last assistant text the admission stored in the session, or null. */
  finalAnswer(principal: Principal, sessionId: string, admissionId: string): Promise<string | null>;
  /** Cancels the admission if queued, interrupts it if running; nothing when it ended. */
  stopAdmission(principal: Principal, sessionId: string, admissionId: string): Promise<void>;
}

export interface DelegationRunnerOptions {
  store: DelegationStore;
  profile: string;
  sessions: DelegationSessions;
  now(): Date;
  /** Whether this instance runs the delegations now (a cluster's lease); absent: always. */
  mayRun?: () => Promise<boolean>;
  tickMs: number;
  fault: (point: string) => void;
  onError: (error: unknown, context: string) => void;
}

/** Admission states after which a child's task has ended. */
const ENDED = ['completed', 'failed', 'cancelled', 'interrupted', 'unknown'];
/** Refusals that pass by themselves: the step is tried again at the next tick. */
const PASSING = ['runtime_draining', 'storage_unavailable', 'owner_unreachable', 'session_busy'];

export class DelegationRunner {
  readonly events = new TypedEmitter<DelegationEvents>();
  /** Asked while a pass runs (a turn settled after it read its rows), another pass follows it. */
  private readonly ticker: Ticker;
  /** The step (or stop) of each delegation going on now: the next waits for it. */
  private readonly going = new Map<string, Promise<unknown>>();
  /** Delegations whose step failed and was logged: tried again at each tick, logged once. */
  private readonly failing = new Set<string>();

  constructor(private readonly options: DelegationRunnerOptions) {
    this.ticker = new Ticker({
      intervalMs: options.tickMs,
      whileRunning: 'again',
      pass: () => this.pass(),
      onError: (error) => options.onError(error, 'delegations pass'),
    });
  }

  start(): void {
    this.ticker.start();
  }

  stop(): Promise<void> {
    return this.ticker.stop();
  }

  /** One pass over the open delegations; asked while one runs, another follows it. */
  tick(): Promise<void> {
    return this.ticker.tick();
  }

  private async pass(): Promise<void> {
    if (this.options.mayRun && !(await this.options.mayRun())) return;
    for (const row of await this.options.store.openDelegations(this.options.profile)) {
      if (this.ticker.stopped) return;
      await this.step(row.delegation_id);
    }
  }

  /** Runs `work` for the delegation once its step going on (if any) ended. */
  exclusive<T>(delegationId: string, work: () => Promise<T>): Promise<T> {
    const before = this.going.get(delegationId) ?? Promise.resolve();
    const next = before.catch(() => undefined).then(work);
    this.going.set(delegationId, next);
    void next
      .catch(() => undefined)
      .finally(() => {
        if (this.going.get(delegationId) === next) this.going.delete(delegationId);
      });
    return next;
  }

  /** Carries the delegation one step on, reading its row afresh. */
  step(delegationId: string): Promise<void> {
    return this.exclusive(delegationId, async () => {
      const row = await this.options.store.getDelegation(delegationId);
      if (row === null) return;
      try {
        if (row.state === 'starting') await this.launch(row);
        else if (row.state === 'running') await this.follow(row);
        this.failing.delete(delegationId);
      } catch (error) {
        // A parent paused by its budget, say: the step is tried again at each tick, logged once.
        if (error instanceof GatewayError && PASSING.includes(error.reason)) return;
        if (!this.failing.has(delegationId)) this.options.onError(error, `delegation ${delegationId}`);
        this.failing.add(delegationId);
      }
    });
  }

  private async launch(row: DelegationRow): Promise<void> {
    const { sessions, store } = this.options;
    const principal = ownerPrincipal(row);
    let childId: string;
    let admissionId: string;
    try {
      const launch = JSON.parse(row.launch) as CreateSessionParams;
      childId = await sessions.createChild(
        principal,
        { ...launch, request_id: childRequestId(row.delegation_id) },
        row.parent_id,
      );
      admissionId = await sessions.submit(principal, childId, taskSubmissionId(row.delegation_id), row.task);
    } catch (error) {
      if (error instanceof GatewayError && !PASSING.includes(error.reason)) {
        await this.report(row, 'failed', `not started: ${error.message}`, null);
        return;
      }
      throw error;
    }
    await store.markRunning(row.delegation_id, childId, admissionId);
    this.events.emit('delegation:started', {
      delegation_id: row.delegation_id,
      parent_id: row.parent_id,
      child_id: childId,
    });
  }

  private async follow(row: DelegationRow): Promise<void> {
    const { sessions } = this.options;
    const admission = await sessions.admission(row.child_admission_id!);
    if (admission === null) {
      await this.report(row, 'failed', 'its child session was deleted', null);
      return;
    }
    if (!ENDED.includes(admission.state)) return;
    const answer =
      admission.state === 'completed'
        ? await sessions.finalAnswer(ownerPrincipal(row), row.child_id!, row.child_admission_id!)
        : null;
    await this.report(row, admission.state, admission.detail, answer);
  }

  /**
   * Admits the result into the parent, then marks the delegation reported. A crash in between
   * admits it again: the same submission id answers the admission already there.
   */
  private async report(
    row: DelegationRow,
    outcome: string,
    detail: string | null,
    answer: string | null,
  ): Promise<void> {
    const text = resultText(row, outcome, detail, answer);
    let admissionId: string | null = null;
    let note = detail;
    try {
      admissionId = await this.options.sessions.submit(
        ownerPrincipal(row),
        row.parent_id,
        resultSubmissionId(row.delegation_id),
        text,
      );
    } catch (error) {
      // The parent is gone: the result has nowhere to go (its child session keeps it).
      if (!(error instanceof GatewayError) || error.reason !== 'not_found') throw error;
      note = `${detail ?? outcome}; its parent session is gone, so the result stays in the child session`;
    }
    this.options.fault('delegation.reported');
    const marked = await this.options.store.markReported(
      row.delegation_id,
      outcome,
      note,
      admissionId,
      this.options.now().toISOString(),
    );
    if (marked)
      this.events.emit('delegation:reported', {
        delegation_id: row.delegation_id,
        parent_id: row.parent_id,
        outcome,
        result_admission_id: admissionId,
      });
  }

  /**
   * Stops the delegation (a user, a parent reset or deletion): marked stopped first, so no step
   * after this one reports it, then its child's task is cancelled or interrupted. False: it had ended.
   */
  stopOne(delegationId: string, detail: string): Promise<boolean> {
    return this.exclusive(delegationId, async () => {
      const row = await this.options.store.getDelegation(delegationId);
      if (row === null) return false;
      const stopped = await this.options.store.markStopped(
        delegationId,
        detail,
        this.options.now().toISOString(),
      );
      if (!stopped) return false;
      if (row.child_id !== null && row.child_admission_id !== null) {
        await this.options.sessions
          .stopAdmission(ownerPrincipal(row), row.child_id, row.child_admission_id)
          .catch((error: unknown) => this.options.onError(error, `stopping delegation ${delegationId}`));
      }
      this.events.emit('delegation:stopped', {
        delegation_id: delegationId,
        parent_id: row.parent_id,
        detail,
      });
      return true;
    });
  }
}
