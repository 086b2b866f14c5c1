/**
 * The user's lines and Ctrl-C. A line is consumed only when the chat can take it: it answers the
 * open prompt if there is one, else it becomes the next submission once the previous one has
 * settled. So piped input (`run: …` then `o`) means the same as a person typing after each
 * question. A submission whose receipt was lost stays unacknowledged and is sent again with the
 * same submission_id once the chat is back (the daemon dedupes it).
 */
import { randomUUID } from 'node:crypto';
import { ConnectionClosedError, RpcCallError } from '../../client/rpc-client.js';
import { promptReply } from './answers.js';
import { parseCommand } from './commands.js';
import type { ChatEvent } from './render.js';
import type { ChatTerminal, SessionView } from './session-view.js';
import type { Call, Submission } from './wire.js';

/** What the input needs from the chat around it. */
export interface InputHost {
  /** Lines are used only while the chat is connected and caught up. */
  isReady(): boolean;
  call: Call;
  /** Detaches and ends the chat. */
  finish(): Promise<void>;
  homeRoot: string;
}

/** A line that opens or closes the multi-line mode: everything between two of them is one message. */
export const MULTI_LINE_FENCE = '"""';

export class ChatInput {
  private readonly lines: string[] = [];
  private eof = false;
  private busy = false;
  private idleInterrupts = 0;
  /** A command whose answer was lost with the link: run again, with the same request_id. */
  private pendingCommand: { line: string; requestId: string } | null = null;
  private commandRunning = false;
  /** Inside the multi-line mode: the lines so far (null outside it). */
  private multi: string[] | null = null;

  constructor(
    private readonly view: SessionView,
    private readonly terminal: ChatTerminal,
    private readonly host: InputHost,
  ) {}

  push(line: string): void {
    if (line.trim() === MULTI_LINE_FENCE) {
      if (this.multi === null) {
        this.multi = [];
        this.view.writeLine(
          this.terminal.style.dim(`(multi-line: end the message with a line of ${MULTI_LINE_FENCE})`),
        );
        return;
      }
      line = this.multi.join('\n');
      this.multi = null;
    } else if (this.multi !== null) {
      this.multi.push(line);
      return;
    }
    this.lines.push(line);
    this.idleInterrupts = 0;
    void this.pump();
  }

  /** The input has ended (Ctrl-D, or the end of piped lines). */
  get ended(): boolean {
    return this.eof;
  }

  end(): void {
    this.eof = true;
    void this.pump();
  }

  /** Ctrl-C: interrupts the running turn, else cancels our queued message; idle, a second press leaves. */
  interrupt(): void {
    this.lines.length = 0;
    const { sessionId, running, inflight } = this.view;
    if (sessionId !== null && running !== null) {
      this.view.writeLine(this.terminal.style.dim('(interrupting the turn…)'));
      this.host.call('session.interrupt', { session_id: sessionId, execution_generation: running }).catch(
        () => undefined, // already over, or the link dropped: nothing left to interrupt
      );
      return;
    }
    if (sessionId !== null && inflight?.admissionId) {
      this.host
        .call('prompt.cancel', { session_id: sessionId, admission_id: inflight.admissionId })
        .catch(() => undefined);
      return;
    }
    if (++this.idleInterrupts >= 2) return void this.host.finish();
    this.view.writeLine(this.terminal.style.dim('(Ctrl-C again to leave, Ctrl-D to detach)'));
    this.terminal.idle();
  }

  /**
   * Uses every line that can be used now. At the end of the input it detaches: a terminal at once,
   * piped input once its last message settled or a question is left open with no line to answer it.
   */
  async pump(): Promise<void> {
    if (!this.host.isReady() || this.busy) return;
    const view = this.view;
    this.busy = true;
    try {
      for (;;) {
        if (!this.host.isReady()) return;
        // Our own message waiting behind an unknown turn would hold /resolve back for ever.
        const resolve =
          view.unknown.length > 0 && view.inflight
            ? this.lines.findIndex((l) => l.trim() === '/resolve')
            : -1;
        if (view.inflight && !view.inflight.acknowledged) {
          if (!(await this.submit(view.inflight))) return;
        } else if (resolve >= 0 && !this.pendingCommand && !this.commandRunning && !view.openPrompt) {
          // /resolve goes ahead of the lines before it (issue 26 item 4).
          this.lines.splice(resolve, 1);
          this.startCommand({ line: '/resolve', requestId: randomUUID() });
        } else if (this.pendingCommand && !this.commandRunning && !view.inflight && !view.openPrompt) {
          this.startCommand(this.pendingCommand);
        } else if (view.openPrompt && this.lines.length > 0) {
          // Also while a command runs: /rollback waits for the answer to its own approval.
          await this.answer(view.openPrompt, this.lines.shift()!);
        } else if (!this.pendingCommand && !view.inflight && !view.openPrompt && this.lines.length > 0) {
          const text = this.lines.shift()!;
          if (text.trim() === '') continue;
          if (!text.includes('\n') && parseCommand(text)) {
            this.pendingCommand = { line: text, requestId: randomUUID() };
            continue;
          }
          const skill = view.nextSkill;
          view.nextSkill = null;
          const sent = skill ? `[skill ${skill.name}: ${skill.path}]\n${skill.body.trim()}\n\n${text}` : text;
          view.inflight = { submissionId: randomUUID(), text: sent, admissionId: null, acknowledged: false };
        } else break;
      }
    } finally {
      this.busy = false;
    }
    if (
      this.eof &&
      this.lines.length === 0 &&
      !this.pendingCommand &&
      (this.terminal.tty || !view.inflight || view.openPrompt)
    ) {
      if (view.openPrompt) view.writeLine('(a question is still open; it waits for whoever resumes)');
      return this.host.finish();
    }
    if (!this.pendingCommand && !view.inflight && !view.openPrompt && this.lines.length === 0)
      this.terminal.idle();
  }

  /** Runs a command beside the pump, which goes on answering prompts; the next line waits for it. */
  private startCommand(pending: { line: string; requestId: string }): void {
    this.commandRunning = true;
    void this.command(pending).then((done) => {
      this.commandRunning = false;
      // Not done: the link dropped; the reconnect pumps again and the command runs again, same id.
      if (done) void this.pump();
    });
  }

  /** Sends one submission; false when the link dropped (the reconnect retries the same id). */
  private async submit(mine: Submission): Promise<boolean> {
    try {
      const receipt = await this.host.call<{ admission_id: string; state: string }>('prompt.submit', {
        session_id: this.view.sessionId,
        submission_id: mine.submissionId,
        text: mine.text,
      });
      this.view.acknowledge(mine, receipt);
      return true;
    } catch (error) {
      if (error instanceof ConnectionClosedError) return false;
      if (error instanceof RpcCallError && error.reason === 'runtime_draining') return false;
      this.terminal.warn(`gatehouse: the gateway refused that message: ${(error as Error).message}`);
      this.view.inflight = null;
      return true;
    }
  }

  /** Runs one chat command; false when the link dropped (it runs again, same id, after the reconnect). */
  private async command(pending: { line: string; requestId: string }): Promise<boolean> {
    const parsed = parseCommand(pending.line)!;
    try {
      await parsed.command.run({
        sessionId: this.view.sessionId!,
        requestId: pending.requestId,
        args: parsed.args,
        call: this.host.call,
        view: this.view,
        terminal: this.terminal,
        homeRoot: this.host.homeRoot,
        leave: () => this.host.finish(),
      });
    } catch (error) {
      if (error instanceof ConnectionClosedError) return false;
      if (error instanceof RpcCallError && error.reason === 'runtime_draining') return false;
      this.terminal.warn(`gatehouse: /${parsed.command.name} failed: ${(error as Error).message}`);
    }
    this.pendingCommand = null;
    return true;
  }

  private async answer(prompt: ChatEvent, line: string): Promise<void> {
    const reply = promptReply(this.view.sessionId!, prompt, line);
    if (reply.kind === 'ask_again') return this.terminal.write(reply.hint);
    const call = this.host.call(reply.method, reply.params);
    this.view.echoAnswer(line);
    try {
      await call;
      if (this.view.openPrompt === prompt) this.view.openPrompt = null;
    } catch (error) {
      if (error instanceof ConnectionClosedError) {
        this.lines.unshift(line); // answered again after the reconnect, if the prompt is still open
        return;
      }
      this.view.writeLine(`gatehouse: that question is no longer open (${(error as Error).message})`);
      if (this.view.openPrompt === prompt) this.view.openPrompt = null;
    }
  }
}
