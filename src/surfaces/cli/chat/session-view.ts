/**
 * The chat's view of its session: what it has shown (the event cursor and the count of transcript
 * messages, see cursor.ts), the running turn, the open prompt and its own submission in flight.
 * Every live event, replayed event and snapshot passes through here; this updates the view and
 * writes what render.ts makes of it. It makes no calls: the rest of the chat reads it to decide.
 */
import { compressionNotice } from '../../../domain/session/compression-notice.js';
import {
  submissionAfterSnapshot,
  unseenMessages,
  type CursorPosition,
  type PendingAdmissionView,
} from './cursor.js';
import {
  INITIAL_RENDER,
  oneLineOf,
  renderEvent,
  renderHistory,
  userLine,
  type ChatEvent,
  type RenderState,
  type StoredMessageView,
  type Style,
} from './render.js';
import { ToolSpinner } from './spinner.js';
import { MarkdownStream } from './markdown.js';

/** What the spinner says between a turn's start (or a tool's end) and the model's first token. */
export const WAITING_FOR_MODEL = 'waiting for the model';
/** Events that end that wait: the model answered, or the turn is over or waits on a person. */
const WAIT_ENDS = new Set([
  'text.delta',
  'reasoning.delta',
  'tool.start',
  'approval.request',
  'clarify.request',
  'turn.complete',
  'admission.settled',
  'session.reset',
]);
import type { Snapshot, Submission } from './wire.js';

/** Where the chat writes, and how the terminal in front of it behaves. */
export interface ChatTerminal {
  /** The terminal echoes what the user types; piped input is echoed from the transcript instead. */
  tty: boolean;
  style: Style;
  write(text: string): void;
  /** One-line failures (stderr). */
  warn(line: string): void;
  /** Called whenever the chat waits for a new line (a TTY shows its prompt then). */
  idle(): void;
}

/** An admission the gateway could not finish: it was running when the gateway died. */
export type UnknownAdmission = PendingAdmissionView;

/** What the chat says about an `unknown` admission, and what the user can do (issue 26 item 4). */
export function unknownNotice(a: UnknownAdmission): string {
  const what = a.text ? ` ("${a.text.length > 60 ? `${a.text.slice(0, 60)}…` : a.text}")` : '';
  return (
    `gatehouse: a turn${what} was running when the gateway stopped; whether its last tool call finished ` +
    'is unknown, and nothing queued after it runs until it is settled. Check its effect, then type ' +
    "/resolve to settle it as interrupted and let the queue run (the dashboard's Resolve does the same)."
  );
}

/** Admission states in a submit receipt that mean there is nothing left to wait for. */
const SETTLED = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

export class SessionView {
  sessionId: string | null = null;
  /** The last event applied; null until the first snapshot. */
  position: CursorPosition | null = null;
  /** Our own submission, from the moment it is typed until its admission settles. */
  inflight: Submission | null = null;
  /** The turn waits for the model's first token (since when, and the last retry): a terminal shows it. */
  private waiting: { since: number; retry: string } | null = null;
  /** `/skill <name>`: the skill the next message is sent with. */
  nextSkill: { name: string; path: string; body: string } | null = null;
  /** The approval or clarify request waiting for an answer. */
  openPrompt: ChatEvent | null = null;
  /** The execution generation of the running turn (what Ctrl-C interrupts). */
  running: number | null = null;
  /**
   * Admissions that were running when the gateway died (state `unknown`): nothing after them runs
   * until one is resolved (`/resolve`, or the dashboard's Resolve). Issue 26 item 4.
   */
  unknown: UnknownAdmission[] = [];
  /** Transcript messages already shown. */
  private shown = 0;
  private render: RenderState = INITIAL_RENDER;
  /** Admissions seen settling, so a receipt arriving after its admission settled ends the wait. */
  private readonly settled = new Set<string>();

  /** The live line of the running tool (terminals only). */
  private readonly spinner: ToolSpinner;

  /** The streamed answer as Markdown (a terminal only); null: written as it comes. */
  private readonly markdown: MarkdownStream | null;

  constructor(private readonly terminal: ChatTerminal) {
    this.spinner = new ToolSpinner((text) => terminal.write(text), terminal.style);
    this.markdown = terminal.style.markdown ? new MarkdownStream(terminal.style.markdown) : null;
  }

  /** Writes what the Markdown renderer held back (an open span, a line start): anything else comes next. */
  private flushMarkdown(): void {
    const held = this.markdown?.flush() ?? '';
    if (held !== '') this.terminal.write(held);
  }

  /** One event in seq order: updates what the chat knows, then shows it. */
  apply(event: ChatEvent): void {
    if (event.type !== 'text.delta') this.flushMarkdown();
    if (event.type === 'turn.start') this.markdown?.reset();
    if (event.type === 'tool.output') {
      // Progress is for a live terminal; a pipe or a log gets the result line only.
      if (this.terminal.tty && this.openPrompt === null)
        this.spinner.show(String(event['name']), {
          last_line: event['last_line'],
          elapsed_ms: event['elapsed_ms'],
        });
      return;
    }
    this.spinner.stop();
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
        if (typeof event['admission_id'] === 'string') {
          this.settled.add(event['admission_id']);
          this.unknown = this.unknown.filter((a) => a.admission_id !== event['admission_id']);
        }
        if (mine?.admissionId && event['admission_id'] === mine.admissionId) this.inflight = null;
        break;
      case 'session.reset':
        // The transcript behind the session is new and empty: count its messages from zero.
        this.shown = 0;
        this.writeLine(
          this.terminal.style.dim('(new conversation: the history is cleared; queued messages stay)'),
        );
        break;
      case 'steer.applied':
        this.writeLine(this.terminal.style.dim('(steer applied: the model sees it in its next call)'));
        break;
      case 'session.model':
        this.writeLine(
          this.terminal.style.dim(`(model: now ${String(event['provider'])}/${String(event['model'])})`),
        );
        break;
      case 'session.compressed':
        // The transcript behind the session was replaced by a shorter one: count from its length.
        this.shown = Number(event['messages_after']);
        this.writeLine(this.terminal.style.dim(`(${compressionNotice(event)})`));
        break;
      case 'transcript.rewound': {
        const undone = Number(event['turns_undone']);
        this.shown = Math.max(0, this.shown - Number(event['rewound_count']));
        this.writeLine(this.terminal.style.dim(`(undid ${undone} turn${undone === 1 ? '' : 's'})`));
        break;
      }
      case 'message.stored': {
        this.shown += 1;
        const message = event['message'] as StoredMessageView & { admission_id?: string };
        const own = mine !== null && message.admission_id === mine.admissionId;
        if (message.role === 'user' && !(own && this.terminal.tty)) {
          this.writeOut(userLine(message.content, this.terminal.style));
        }
        break;
      }
    }
    const rendered = renderEvent(this.render, event, this.terminal.style);
    this.render = rendered.state;
    const text =
      this.markdown && event.type === 'text.delta' ? this.markdown.feed(rendered.text) : rendered.text;
    if (text) this.terminal.write(text);
    // Anything else shown ends its own line: the answer resumes at the start of one.
    if (text && event.type !== 'text.delta') this.markdown?.lineBroken();
    if (event.type === 'tool.start' && this.terminal.tty) this.spinner.show(String(event['name']));
    this.waitForModel(event);
  }

  /**
   * From the turn's start (and after each tool) to the model's first token the terminal is never
   * silent: a spinner with the time waited and, while the provider is retried, the retry count.
   */
  private waitForModel(event: ChatEvent): void {
    if (!this.terminal.tty) return;
    if (event.type === 'turn.start' || event.type === 'tool.complete') {
      this.waiting = { since: Date.now(), retry: '' };
    } else if (event.type === 'model.retry' && this.waiting) {
      this.waiting.retry = `retry ${Number(event['attempt'])}: ${oneLineOf(String(event['reason']), 80)}`;
    } else if (WAIT_ENDS.has(event.type)) {
      this.waiting = null;
    }
    if (this.waiting === null || this.openPrompt !== null) return;
    this.spinner.show(WAITING_FOR_MODEL, {
      elapsed_ms: Date.now() - this.waiting.since,
      last_line: this.waiting.retry,
    });
  }

  /** Rebuilds from a snapshot: the messages not shown yet, the cursor, the turn and the open prompt. */
  fromSnapshot(snapshot: Snapshot): void {
    this.flushMarkdown();
    if (this.render.midLine) this.terminal.write('\n');
    this.render = INITIAL_RENDER;
    this.terminal.write(renderHistory(unseenMessages(snapshot.messages, this.shown), this.terminal.style));
    this.shown = Math.max(this.shown, snapshot.messages.length);
    this.position = { epoch: snapshot.epoch, lastSeq: snapshot.last_seq };
    this.running = snapshot.running?.generation ?? null;
    const known = new Set(this.unknown.map((a) => a.admission_id));
    this.unknown = snapshot.pending_admissions.filter((a) => a.state === 'unknown');
    // Said once per unknown admission (a reconnect's snapshot does not repeat it).
    for (const a of this.unknown) if (!known.has(a.admission_id)) this.writeLine(unknownNotice(a));
    this.reconcile(snapshot);
    const open = snapshot.prompts[0] ?? null;
    const same = open !== null && this.openPrompt?.['prompt_id'] === open['prompt_id'];
    this.openPrompt = null;
    if (open && !same) this.apply(open);
    else this.openPrompt = open;
  }

  /** Where our own submission stands according to a snapshot's unsettled admissions. */
  reconcile(snapshot: Snapshot): void {
    if (!this.inflight) return;
    const after = submissionAfterSnapshot(this.inflight, snapshot.pending_admissions);
    if (after.kind === 'pending') {
      this.inflight.admissionId = after.admissionId;
      this.inflight.acknowledged = true;
    } else if (after.kind === 'unknown') {
      // fromSnapshot said what happened and what to do (unknownNotice).
      this.inflight = null;
    } else if (after.kind === 'settled') {
      this.inflight = null;
    }
  }

  /** The gateway admitted our submission; it may already have settled (then we stop waiting). */
  acknowledge(mine: Submission, receipt: { admission_id: string; state: string }): void {
    mine.acknowledged = true;
    mine.admissionId = receipt.admission_id;
    if (receipt.state === 'queued' && this.unknown.length > 0)
      this.writeLine(
        this.terminal.style.dim(
          '(queued behind the turn whose effect is unknown: /resolve settles it and lets the queue run)',
        ),
      );
    if (SETTLED.has(receipt.state) || this.settled.has(receipt.admission_id)) this.inflight = null;
  }

  /** An answer to the open question: a terminal echoed it already, piped input is shown after it. */
  echoAnswer(line: string): void {
    if (this.render.midLine && !this.terminal.tty) this.terminal.write(`${line}\n`);
    this.render = { ...this.render, midLine: false };
  }

  /** Finishes a half-written line before the chat's last words. */
  endLine(): void {
    this.flushMarkdown();
    this.spinner.stop();
    if (this.render.midLine) this.terminal.write('\n');
  }

  writeLine(text: string): void {
    this.writeOut(`${text}\n`);
  }

  private writeOut(text: string): void {
    this.flushMarkdown();
    this.spinner.stop();
    if (this.render.midLine) this.terminal.write('\n');
    this.render = { ...this.render, midLine: false };
    this.terminal.write(text);
    this.markdown?.lineBroken();
  }
}
