/**
 * One request's view of its turn: a viewer of the session (one more, like a chat window) that picks
 * out the events of its own admission and says when the turn settled. Sessions run one turn at a
 * time, so the text deltas between its `turn.start` and its settlement are its own.
 *
 *   waiting ──turn.start(ours)──▶ live ──admission.settled(ours)──▶ settled
 *      └──────────────admission.settled(ours)───────────────────────────┘
 *
 * Events that arrive before the admission id is known (the viewer attaches before the submission,
 * so nothing is missed) are kept, a bounded few, and replayed once it is.
 */
import { randomUUID } from 'node:crypto';
import type { Principal } from '../../domain/auth/principal.js';
import {
  EVENT_NOTIFICATION,
  type EventNotification,
  type PublicEvent,
  type SharedEvent,
  type Viewer,
} from '../../domain/local/hub.js';

/** Turn events an API client is shown in a streamed answer's `gatehouse` field. */
const NOTICES = new Set([
  'tool.start',
  'tool.complete',
  'approval.request',
  'approval.settled',
  'clarify.request',
  'clarify.settled',
  'turn.resumed',
]);
const WAITS = new Set(['approval.request', 'clarify.request']);
const ANSWERED = new Set(['approval.settled', 'clarify.settled']);
const EARLY_LIMIT = 1024;

export interface TurnSettlement {
  outcome: string;
  /** From the turn's `turn.complete`, when this viewer saw it. */
  finalText: string | null;
  usage: { input_tokens?: unknown; output_tokens?: unknown } | undefined;
  error: { reason: string; message: string } | null;
}

export interface TurnWatchHandlers {
  /** Text the model streams while the turn is live (only once its start was seen). */
  delta(text: string): void;
  /** A tool call, an approval asked or answered, a resumed turn. */
  notice(event: PublicEvent): void;
  /** The turn waits for a human (`waiting` true) or no longer does. */
  waiting(waiting: boolean, event: PublicEvent): void;
}

export class TurnWatch implements Viewer {
  readonly id = `openai-${randomUUID()}`;
  private admissionId: string | null = null;
  private early: PublicEvent[] = [];
  /** Its `turn.start` was seen: every delta of the turn came through here. */
  private live = false;
  /** The turn's start was seen, so its whole text was streamed live (stays true once settled). */
  streamedLive = false;
  /** Attached to its turn already running (a retry): its notices are shown, its text only at the end. */
  private joined = false;
  private finalText: string | null = null;
  private usage: TurnSettlement['usage'];
  private error: TurnSettlement['error'] = null;
  private resolve!: (settlement: TurnSettlement) => void;
  readonly settled: Promise<TurnSettlement>;

  constructor(
    readonly principal: Principal,
    private readonly handlers: TurnWatchHandlers,
  ) {
    this.settled = new Promise((resolve) => (this.resolve = resolve));
  }

  notify(method: string, params: unknown): boolean {
    if (method !== EVENT_NOTIFICATION) return true;
    const event = (params as EventNotification).event;
    if (this.admissionId === null) {
      if (this.early.length < EARLY_LIMIT) this.early.push(event);
    } else this.apply(event);
    return true;
  }

  /** An in-process viewer: it reads the event itself and never needs the wire frame. */
  deliver(note: SharedEvent): boolean {
    return this.notify(note.method, note.params);
  }

  /** The submission answered: from now on events are matched to this admission. */
  admitted(admissionId: string, running: boolean): void {
    this.admissionId = admissionId;
    this.joined = running;
    const early = this.early;
    this.early = [];
    for (const event of early) this.apply(event);
  }

  private apply(event: PublicEvent): void {
    const ours = event.admission_id === this.admissionId;
    switch (event.type) {
      case 'turn.start':
        if (ours) this.live = this.streamedLive = true;
        return;
      case 'text.delta':
        if (this.live && typeof event.text === 'string') this.handlers.delta(event.text);
        return;
      case 'turn.complete':
        if (!ours) return;
        this.finalText = typeof event.final_text === 'string' ? event.final_text : null;
        this.usage = event.usage as TurnSettlement['usage'];
        this.error = (event.error as TurnSettlement['error']) ?? null;
        return;
      case 'admission.settled':
        if (!ours) return;
        this.live = false;
        this.joined = false;
        this.resolve({
          outcome: String(event.outcome),
          finalText: this.finalText,
          usage: this.usage,
          error: this.error,
        });
        return;
      default:
        if (!(this.live || this.joined) || !NOTICES.has(event.type)) return;
        this.handlers.notice(event);
        if (WAITS.has(event.type)) this.handlers.waiting(true, event);
        if (ANSWERED.has(event.type)) this.handlers.waiting(false, event);
    }
  }
}
