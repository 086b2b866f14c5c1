/**
 * One `session/prompt` of the editor, followed through the session's events until its admission
 * settles. Sessions run one turn at a time, so the events between our turn's `turn.start` (or
 * `turn.resumed`) and its `turn.complete` are ours:
 *
 *   submitting ──admission known──▶ admitted ──turn.start(ours)──▶ live ──admission.settled──▶ done
 *        └──────────────────────────admission.settled(ours) / settled receipt──────────────────┘
 *
 * The admission id is learnt from `admission.queued` (our submission_id) or from the receipt,
 * whichever comes first; events of a turn that started before we knew are kept (a bounded few) and
 * replayed once we do. Every update to the editor goes through one promise chain, so they arrive in
 * order and before the prompt's answer.
 */
import type { SessionUpdate, StopReason } from '@agentclientprotocol/sdk';
import { liveUpdate, stopReason, type GatehouseEvent } from './translate.js';

/** Held events of a turn whose admission id is not known yet. */
const EARLY_LIMIT = 1024;

export type TurnPhase = 'submitting' | 'admitted' | 'live' | 'done';

/** How the turn ended: a stop reason, or why it did not complete. */
export type TurnEnd =
  | { kind: 'stop'; stopReason: StopReason }
  | { kind: 'failed'; outcome: string; error: { reason: string; message: string } | null };

export interface TurnHost {
  /** Sends one session update to the editor (in order). */
  update(update: SessionUpdate): Promise<void>;
  /** An approval of our live turn waits: ask the editor (the host answers the gateway). */
  approval(event: GatehouseEvent, toolCallId: string | null): void;
  /** The approval `promptId` was settled (by anyone): stop asking the editor. */
  approvalSettled(promptId: string): void;
}

export class PromptTurn {
  phase: TurnPhase = 'submitting';
  admissionId: string | null = null;
  /** The execution generation of our running turn (what session/cancel interrupts). */
  generation: number | null = null;
  /** The editor cancelled: the next chance interrupts (or cancels the queued admission). */
  cancelRequested = false;
  private early: GatehouseEvent[] = [];
  /** The admission id of the turn the session is running now, ours or not. */
  private running: string | null = null;
  private lastToolCallId: string | null = null;
  private completion: TurnEnd | null = null;
  private chain: Promise<void> = Promise.resolve();
  private resolveEnd!: (end: TurnEnd) => void;
  readonly ended: Promise<TurnEnd>;

  constructor(
    readonly submissionId: string,
    private readonly host: TurnHost,
  ) {
    this.ended = new Promise((resolve) => (this.resolveEnd = resolve));
  }

  /** One live event of the session, in seq order. */
  receive(event: GatehouseEvent): void {
    if (this.phase === 'done') return;
    if (event.type === 'admission.queued' && event['submission_id'] === this.submissionId) {
      this.admitted(String(event['admission_id']));
      return;
    }
    if (this.admissionId === null) {
      if (this.early.length < EARLY_LIMIT) this.early.push(event);
      return;
    }
    this.apply(event);
  }

  /** The receipt of prompt.submit: our admission, and its state (settled already, for a retry). */
  receipt(receipt: { admission_id: string; state: string }): void {
    if (this.phase === 'done') return;
    this.admitted(receipt.admission_id);
    if (receipt.state === 'unknown')
      this.finish({
        kind: 'failed',
        outcome: 'unknown',
        error: {
          reason: 'unknown',
          message: 'the gateway stopped while this turn ran; its effect is unknown and it is not run again',
        },
      });
    else if (SETTLED.has(receipt.state)) this.settle(receipt.state);
  }

  /** Ends the turn from outside (the gateway went away). */
  fail(outcome: string, message: string): void {
    this.finish({ kind: 'failed', outcome, error: { reason: outcome, message } });
  }

  private admitted(admissionId: string): void {
    if (this.admissionId !== null) return;
    this.admissionId = admissionId;
    if (this.phase === 'submitting') this.phase = 'admitted';
    const early = this.early;
    this.early = [];
    for (const event of early) this.apply(event);
  }

  private apply(event: GatehouseEvent): void {
    if (this.phase === 'done') return;
    const ours = event['admission_id'] === this.admissionId;
    switch (event.type) {
      case 'turn.start':
      case 'turn.resumed':
        this.running = typeof event['admission_id'] === 'string' ? event['admission_id'] : null;
        if (ours) {
          this.phase = 'live';
          this.generation = Number(event['execution_generation']);
        }
        return;
      case 'admission.settled':
        if (ours) this.settle(String(event['outcome']));
        return;
      case 'turn.complete':
        if (this.phase === 'live') {
          const error = event['error'] as { reason: string; message: string } | null | undefined;
          this.completion =
            stopReason(String(event['outcome'])) === null
              ? { kind: 'failed', outcome: String(event['outcome']), error: error ?? null }
              : null;
        }
        this.running = null;
        return;
    }
    if (this.phase !== 'live' || this.running !== this.admissionId) return;
    if (event.type === 'tool.start') this.lastToolCallId = String(event['tool_call_id']);
    if (event.type === 'approval.request') return this.host.approval(event, this.lastToolCallId);
    if (event.type === 'approval.settled') return this.host.approvalSettled(String(event['prompt_id']));
    const update = liveUpdate(event);
    if (update) this.send(update);
  }

  private send(update: SessionUpdate): void {
    this.chain = this.chain.then(() => this.host.update(update)).catch(() => undefined);
  }

  private settle(outcome: string): void {
    const reason = stopReason(outcome);
    if (reason !== null) return this.finish({ kind: 'stop', stopReason: reason });
    this.finish(this.completion ?? { kind: 'failed', outcome, error: null });
  }

  private finish(end: TurnEnd): void {
    if (this.phase === 'done') return;
    this.phase = 'done';
    // The updates already queued reach the editor before the prompt's answer.
    void this.chain.then(() => this.resolveEnd(end));
  }
}

const SETTLED = new Set(['completed', 'failed', 'cancelled', 'interrupted']);
