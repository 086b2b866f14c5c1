/**
 * The chat's state machine over one session. Lines come in from the terminal (or a pipe); events
 * come in from the gateway. A line is consumed only when the chat can take it: it answers the open
 * prompt if there is one, else it becomes the next submission once the previous one has settled.
 * So piped input (`run: …` then `o`) means the same as a person typing after each question.
 *
 * The connection may drop at any time (daemon restart): the chat then reconnects with a new
 * ticket, re-attaches, and catches up by replay or from a snapshot (cursor.ts decides), then
 * retries the one unacknowledged submission with the same submission_id (the daemon dedupes it).
 */
import { randomUUID } from 'node:crypto';
import { DEMO_MODEL_DESCRIPTION } from '../../../daemon/config.js';
import type { HomeLayout } from '../../../daemon/home.js';
import { ConnectionClosedError, RpcCallError, type Notification } from '../../client/rpc-client.js';
import { promptReply } from './answers.js';
import {
  classifyArrival,
  planResync,
  submissionAfterSnapshot,
  unseenEvents,
  unseenMessages,
  type CursorPosition,
} from './cursor.js';
import { openLink, reopenLink, type Link } from './link.js';
import type { Sequenced, Snapshot, Submission } from './wire.js';
import {
  INITIAL_RENDER,
  banner,
  renderEvent,
  renderHistory,
  resumeHint,
  userLine,
  type ChatEvent,
  type RenderState,
  type StoredMessageView,
  type Style,
} from './render.js';

export interface ChatOptions {
  layout: HomeLayout;
  resume?: string;
  create: { cwd?: string; model?: string; source: 'cli' | 'tui' };
  /** The terminal echoes what the user types; piped input is echoed from the transcript instead. */
  tty: boolean;
  style: Style;
  write(text: string): void;
  /** One-line failures (stderr). */
  warn(line: string): void;
  /** Called whenever the chat waits for a new line (a TTY shows its prompt then). */
  idle(): void;
  reconnectGiveUpMs?: number;
}

type Phase = 'connecting' | 'ready' | 'closing';

const SETTLED = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

export class ChatController {
  private link: Link | null = null;
  private sessionId: string | null = null;
  private position: CursorPosition | null = null;
  private shown = 0;
  private view: RenderState = INITIAL_RENDER;
  private inflight: Submission | null = null;
  private openPrompt: ChatEvent | null = null;
  private running: number | null = null;
  private readonly lines: string[] = [];
  private eof = false;
  private phase: Phase = 'connecting';
  private held: Sequenced[] = [];
  private busy = false;
  private idleInterrupts = 0;
  private readonly settled = new Set<string>();
  private resolveDone!: (code: number) => void;
  readonly done = new Promise<number>((resolve) => (this.resolveDone = resolve));

  constructor(private readonly options: ChatOptions) {}

  // ---- inputs --------------------------------------------------------------------------------------

  async start(): Promise<void> {
    const requestId = randomUUID(); // one per chat: a retried create can never make a second session
    for (;;) {
      this.attach(this.link ?? (await openLink(this.options.layout)));
      try {
        if (this.sessionId === null) {
          this.sessionId =
            this.options.resume ??
            (
              await this.call<{ session_id: string }>('session.create', {
                request_id: requestId,
                source: this.options.create.source,
                ...(this.options.create.cwd !== undefined ? { cwd: this.options.create.cwd } : {}),
                ...(this.options.create.model !== undefined ? { model: this.options.create.model } : {}),
              })
            ).session_id;
        }
        const snapshot = await this.call<Snapshot>('session.resume', { session_id: this.sessionId });
        this.options.write(
          banner(
            {
              sessionId: snapshot.session_id,
              cwd: snapshot.info.cwd,
              model: snapshot.info.model,
              gatewayModel: this.link!.info.model,
              demo: this.link!.info.model === DEMO_MODEL_DESCRIPTION,
              resumed: this.options.resume !== undefined,
            },
            this.options.style,
          ),
        );
        this.fromSnapshot(snapshot);
        break;
      } catch (error) {
        if (!(error instanceof ConnectionClosedError)) throw error;
        this.link = null; // the daemon went away while we started: start over on a new link
      }
    }
    this.ready();
  }

  input(line: string): void {
    this.lines.push(line);
    this.idleInterrupts = 0;
    void this.pump();
  }

  endOfInput(): void {
    this.eof = true;
    void this.pump();
  }

  /** Ctrl-C: interrupt the running turn; when idle, the second press leaves. */
  interrupt(): void {
    if (this.phase === 'closing') return this.resolveDone(130);
    this.lines.length = 0;
    const sessionId = this.sessionId;
    if (sessionId !== null && this.running !== null) {
      this.writeLine(this.options.style.dim('(interrupting the turn…)'));
      this.call('session.interrupt', { session_id: sessionId, execution_generation: this.running }).catch(
        () => undefined, // already over, or the link dropped: nothing left to interrupt
      );
      return;
    }
    if (sessionId !== null && this.inflight?.admissionId) {
      this.call('prompt.cancel', { session_id: sessionId, admission_id: this.inflight.admissionId }).catch(
        () => undefined,
      );
      return;
    }
    if (++this.idleInterrupts >= 2) return void this.finish();
    this.writeLine(this.options.style.dim('(Ctrl-C again to leave, Ctrl-D to detach)'));
    this.options.idle();
  }

  // ---- the connection ------------------------------------------------------------------------------

  private attach(link: Link): void {
    this.link = link;
    link.client.onNotification((n) => this.receive(link, n));
    link.client.onClose(() => {
      if (this.link === link && this.phase !== 'closing') void this.reconnect();
    });
  }

  private call<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    if (!this.link) return Promise.reject(new ConnectionClosedError(1006));
    return this.link.client.call<T>(method, params);
  }

  private async reconnect(): Promise<void> {
    this.phase = 'connecting';
    this.link = null;
    this.writeLine(this.options.style.dim('(lost the gateway; reconnecting…)'));
    let said = false;
    for (;;) {
      let link: Link | null;
      try {
        link = await reopenLink(this.options.layout, {
          giveUpMs: this.options.reconnectGiveUpMs ?? 120_000,
          cancelled: () => this.phase === 'closing',
          onRetry: (reason) => {
            if (!said) this.writeLine(this.options.style.dim(`(still reconnecting: ${reason})`));
            said = true;
          },
        });
      } catch (error) {
        return this.fail(new Error(`could not reach the gateway again: ${(error as Error).message}`));
      }
      if (link === null) return;
      this.attach(link);
      try {
        await this.resync();
        this.writeLine(
          this.options.style.dim(`(reconnected to the gateway, pid ${link.info.pid}; same session)`),
        );
        this.ready();
        return;
      } catch (error) {
        if (!(error instanceof ConnectionClosedError)) return this.fail(error);
        // Dropped again while catching up: try again.
      }
    }
  }

  private ready(): void {
    this.phase = 'ready';
    void this.pump();
  }

  private receive(link: Link, n: Notification): void {
    if (n.method !== 'session.event' || link !== this.link) return;
    const e = n.params as Sequenced;
    if (e.session_id !== this.sessionId) return;
    if (this.phase !== 'ready' || this.position === null) {
      this.held.push(e);
      return;
    }
    switch (classifyArrival(this.position, e.epoch, e.seq)) {
      case 'apply':
        this.position = { epoch: e.epoch, lastSeq: e.seq };
        this.apply(e.event);
        break;
      case 'duplicate':
        break;
      default:
        this.held.push(e);
        this.phase = 'connecting';
        this.resync()
          .then(() => this.ready())
          .catch((error: unknown) => {
            // A drop is handled by the close listener; anything else ends the chat with one line.
            if (!(error instanceof ConnectionClosedError)) this.fail(error);
          });
    }
  }

  /** Re-attach and catch up: replay from the buffer when possible, else rebuild from the snapshot. */
  private async resync(): Promise<void> {
    for (let round = 0; round < 3; round++) {
      const snapshot = await this.call<Snapshot>('session.resume', { session_id: this.sessionId });
      const plan = planResync(this.position, snapshot.epoch);
      if (plan.kind === 'replay') {
        try {
          const since = await this.call<{ events: { seq: number; event: ChatEvent }[] }>(
            'session.events.since',
            { session_id: this.sessionId, epoch: plan.epoch, after_seq: plan.afterSeq },
          );
          for (const e of unseenEvents(since.events, this.position!.lastSeq)) {
            this.position = { epoch: plan.epoch, lastSeq: e.seq };
            this.apply(e.event, false);
          }
          if (this.inflight && !this.inflight.acknowledged) this.reconcile(snapshot);
        } catch (error) {
          if (!(error instanceof RpcCallError && error.reason === 'snapshot_required')) throw error;
          this.fromSnapshot(snapshot);
        }
      } else {
        this.fromSnapshot(snapshot);
      }
      if (this.drainHeld()) return;
    }
  }

  /** Applies held live events in order; false when a gap remains (resync again). */
  private drainHeld(): boolean {
    const held = this.held.sort((a, b) => a.seq - b.seq);
    this.held = [];
    for (const e of held) {
      const arrival = classifyArrival(this.position!, e.epoch, e.seq);
      if (arrival === 'duplicate') continue;
      if (arrival !== 'apply') return false;
      this.position = { epoch: e.epoch, lastSeq: e.seq };
      this.apply(e.event, false);
    }
    return true;
  }

  private fromSnapshot(snapshot: Snapshot): void {
    if (this.view.midLine) this.options.write('\n');
    this.view = INITIAL_RENDER;
    this.options.write(renderHistory(unseenMessages(snapshot.messages, this.shown), this.options.style));
    this.shown = Math.max(this.shown, snapshot.messages.length);
    this.position = { epoch: snapshot.epoch, lastSeq: snapshot.last_seq };
    this.running = snapshot.running?.generation ?? null;
    this.reconcile(snapshot);
    const open = snapshot.prompts[0] ?? null;
    const same = open !== null && this.openPrompt?.['prompt_id'] === open['prompt_id'];
    this.openPrompt = null;
    if (open && !same) this.apply(open, false);
    else this.openPrompt = open;
  }

  /** Where our own submission stands according to a snapshot's unsettled admissions. */
  private reconcile(snapshot: Snapshot): void {
    if (!this.inflight) return;
    const after = submissionAfterSnapshot(this.inflight, snapshot.pending_admissions);
    if (after.kind === 'pending') {
      this.inflight.admissionId = after.admissionId;
      this.inflight.acknowledged = true;
    } else if (after.kind === 'unknown') {
      this.writeLine('gatehouse: that turn was running when the gateway died; its effect is unknown.');
      this.inflight = null;
    } else if (after.kind === 'settled') {
      this.inflight = null;
    }
  }

  // ---- events --------------------------------------------------------------------------------------

  private apply(event: ChatEvent, pump = true): void {
    const mine = this.inflight;
    switch (event.type) {
      case 'turn.start':
        this.running = Number(event['execution_generation']);
        break;
      case 'admission.queued':
        if (mine && event['submission_id'] === mine.submissionId) {
          mine.admissionId = String(event['admission_id']);
        }
        break;
      case 'approval.request':
      case 'clarify.request':
        this.openPrompt = event;
        break;
      case 'approval.settled':
      case 'clarify.settled':
        if (this.openPrompt?.['prompt_id'] === event['prompt_id']) this.openPrompt = null;
        break;
      case 'turn.complete':
      case 'admission.settled':
        if (event.type === 'turn.complete') this.running = null;
        if (typeof event['admission_id'] === 'string') this.settled.add(event['admission_id']);
        if (mine?.admissionId && event['admission_id'] === mine.admissionId) this.inflight = null;
        break;
      case 'message.stored': {
        this.shown += 1;
        const message = event['message'] as StoredMessageView & { admission_id?: string };
        const own = mine !== null && message.admission_id === mine.admissionId;
        if (message.role === 'user' && !(own && this.options.tty)) {
          this.writeOut(userLine(message.content, this.options.style));
        }
        break;
      }
    }
    const rendered = renderEvent(this.view, event, this.options.style);
    this.view = rendered.state;
    if (rendered.text) this.options.write(rendered.text);
    if (pump) void this.pump();
  }

  // ---- acting on lines -----------------------------------------------------------------------------

  private async pump(): Promise<void> {
    if (this.phase !== 'ready' || this.busy) return;
    this.busy = true;
    try {
      for (;;) {
        if (this.phase !== 'ready') return;
        if (this.inflight && !this.inflight.acknowledged) {
          if (!(await this.submit(this.inflight))) return;
        } else if (this.openPrompt && this.lines.length > 0) {
          await this.answer(this.openPrompt, this.lines.shift()!);
        } else if (!this.inflight && !this.openPrompt && this.lines.length > 0) {
          const text = this.lines.shift()!;
          if (text.trim() === '') continue;
          this.inflight = { submissionId: randomUUID(), text, admissionId: null, acknowledged: false };
        } else break;
      }
    } finally {
      this.busy = false;
    }
    if (this.eof && this.lines.length === 0 && (this.options.tty || !this.inflight || this.openPrompt)) {
      if (this.openPrompt) this.writeLine('(a question is still open; it waits for whoever resumes)');
      return this.finish();
    }
    if (!this.inflight && !this.openPrompt && this.lines.length === 0) this.options.idle();
  }

  /** Sends one submission; false when the link dropped (the reconnect retries the same id). */
  private async submit(mine: Submission): Promise<boolean> {
    try {
      const receipt = await this.call<{ admission_id: string; state: string }>('prompt.submit', {
        session_id: this.sessionId,
        submission_id: mine.submissionId,
        text: mine.text,
      });
      mine.acknowledged = true;
      mine.admissionId = receipt.admission_id;
      if (SETTLED.has(receipt.state) || this.settled.has(receipt.admission_id)) this.inflight = null;
      return true;
    } catch (error) {
      if (error instanceof ConnectionClosedError) return false;
      if (error instanceof RpcCallError && error.reason === 'runtime_draining') return false;
      this.options.warn(`gatehouse: the gateway refused that message: ${(error as Error).message}`);
      this.inflight = null;
      return true;
    }
  }

  private async answer(prompt: ChatEvent, line: string): Promise<void> {
    const reply = promptReply(this.sessionId!, prompt, line);
    if (reply.kind === 'ask_again') return this.options.write(reply.hint);
    const call = this.call(reply.method, reply.params);
    if (this.view.midLine && !this.options.tty) this.options.write(`${line}\n`);
    this.view = { ...this.view, midLine: false };
    try {
      await call;
      if (this.openPrompt === prompt) this.openPrompt = null;
    } catch (error) {
      if (error instanceof ConnectionClosedError) {
        this.lines.unshift(line); // answered again after the reconnect, if the prompt is still open
        return;
      }
      this.writeLine(`gatehouse: that question is no longer open (${(error as Error).message})`);
      if (this.openPrompt === prompt) this.openPrompt = null;
    }
  }

  private async finish(): Promise<void> {
    if (this.phase === 'closing') return;
    this.phase = 'closing';
    const link = this.link;
    if (link && this.sessionId) {
      await link.client.call('session.detach', { session_id: this.sessionId }).catch(() => undefined);
      await link.client.close().catch(() => undefined);
    }
    if (this.view.midLine) this.options.write('\n');
    this.options.write(resumeHint(this.sessionId ?? '?'));
    this.resolveDone(0);
  }

  /** Ends the chat on an error it cannot recover from: one line, the way back in, exit 1. */
  private fail(error: unknown): void {
    this.phase = 'closing';
    this.options.warn(`gatehouse: ${error instanceof Error ? error.message : String(error)}`);
    this.options.write(resumeHint(this.sessionId ?? '?'));
    void this.link?.client.close();
    this.resolveDone(1);
  }

  private writeLine(text: string): void {
    this.writeOut(`${text}\n`);
  }

  private writeOut(text: string): void {
    if (this.view.midLine) this.options.write('\n');
    this.view = { ...this.view, midLine: false };
    this.options.write(text);
  }
}
