/**
 * The chat on one session: its lifecycle and its link to the gateway. It is `connecting` until the
 * session is attached and caught up, `ready` while lines and live events flow, `stopped` after the
 * gateway was stopped on purpose (it waits: see gatewayStopped), and `closing` once it detaches or
 * fails. The parts it wires together:
 *
 * - session-view.ts: what the chat knows of the session and has shown; every event goes through it.
 * - catch-up.ts: live events in seq order, and the replay or snapshot that fills a gap.
 * - input.ts: when a typed or piped line is used, and what Ctrl-C does.
 *
 * The connection may drop at any time (daemon restart): the chat then reconnects with a new
 * ticket, re-attaches, catches up, and the input retries the one unacknowledged submission with
 * the same submission_id (the daemon dedupes it).
 */
import { randomUUID } from 'node:crypto';
import { DEMO_MODEL_DESCRIPTION } from '../../../daemon/config.js';
import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import type { HomeLayout } from '../../../daemon/home.js';
import { ConnectionClosedError, type Notification } from '../../client/rpc-client.js';
import { approvalKeys } from './answers.js';
import { CatchUp } from './catch-up.js';
import { ChatInput } from './input.js';
import { openLink, reopenLink, type Link } from './link.js';
import { banner, resumeHint } from './render.js';
import { SessionView, type ChatTerminal } from './session-view.js';
import type { Sequenced, Snapshot } from './wire.js';

export interface ChatOptions extends ChatTerminal {
  layout: HomeLayout;
  resume?: string;
  /** `--continue`: resume the newest stored session. */
  continueNewest?: boolean;
  create: {
    cwd?: string;
    model?: string;
    source: 'cli' | 'tui';
    /** Further launch fields of session.create (checkpoints, accept_hooks). */
    launch?: Record<string, unknown>;
  };
  reconnectGiveUpMs?: number;
}

type Phase = 'connecting' | 'ready' | 'stopped' | 'closing';

/** WebSocket "going away": the daemon closes viewers with it when it shuts down on purpose. */
const CLOSE_GOING_AWAY = 1001;
/** How often a chat waiting after a deliberate stop looks for a gateway that came back. */
const COME_BACK_POLL_MS = 250;

export class ChatController {
  private link: Link | null = null;
  private phase: Phase = 'connecting';
  /** The daemon said it is stopping on purpose (`gateway.stopping`): its close is not a crash. */
  private stopping = false;
  /** While `stopped`: the daemon that stopped (a gateway running again is another one). */
  private stoppedInstance: string | null = null;
  /** The chat's own command under way (`/title`): the chat detaches only after it. */
  private commanding: Promise<void> = Promise.resolve();
  /** Waiting for the chat to be attached (or to end): see attached(). */
  private waitingReady: (() => void)[] = [];
  private readonly view: SessionView;
  private readonly catchUp: CatchUp;
  private readonly lines: ChatInput;
  private resolveDone!: (code: number) => void;
  readonly done = new Promise<number>((resolve) => (this.resolveDone = resolve));

  constructor(private readonly options: ChatOptions) {
    const call = this.call.bind(this);
    this.view = new SessionView(options);
    this.catchUp = new CatchUp(this.view, call);
    this.lines = new ChatInput(this.view, options, {
      isReady: () => this.phase === 'ready',
      call,
      finish: () => this.finish(),
      homeRoot: options.layout.root,
    });
  }

  // ---- inputs --------------------------------------------------------------------------------------

  async start(): Promise<void> {
    const requestId = randomUUID(); // one per chat: a retried create can never make a second session
    for (;;) {
      this.attach(this.link ?? (await openLink(this.options.layout)));
      try {
        if (this.view.sessionId === null && this.options.continueNewest) {
          this.view.sessionId = await this.newestSession();
        }
        if (this.view.sessionId === null) {
          this.view.sessionId =
            this.options.resume ??
            (
              await this.call<{ session_id: string }>('session.create', {
                request_id: requestId,
                source: this.options.create.source,
                ...(this.options.create.cwd !== undefined ? { cwd: this.options.create.cwd } : {}),
                ...(this.options.create.model !== undefined ? { model: this.options.create.model } : {}),
                ...this.options.create.launch,
              })
            ).session_id;
        }
        const snapshot = await this.call<Snapshot>('session.resume', { session_id: this.view.sessionId });
        this.options.write(
          banner(
            {
              sessionId: snapshot.session_id,
              cwd: snapshot.info.cwd,
              model: snapshot.info.model,
              gatewayModel: this.link!.info.model,
              demo: this.link!.info.model === DEMO_MODEL_DESCRIPTION,
              resumed: this.options.resume !== undefined || this.options.continueNewest === true,
              instructions: snapshot.info.instruction_files ?? null,
            },
            this.options.style,
          ),
        );
        this.view.fromSnapshot(snapshot);
        break;
      } catch (error) {
        if (!(error instanceof ConnectionClosedError)) throw error;
        this.link = null; // the daemon went away while we started: start over on a new link
      }
    }
    this.ready();
  }

  /** The newest stored session, for `--continue`; none is the user's to hear about. */
  private async newestSession(): Promise<string> {
    const { sessions } = await this.call<{ sessions: { session_id: string }[] }>('session.list', {
      scope: 'stored',
      limit: 1,
      archived: false,
    });
    const newest = sessions[0]?.session_id;
    if (newest === undefined) {
      throw new DaemonError(
        'not_available',
        'there is no session to continue yet: start one with "gatehouse chat"',
      );
    }
    return newest;
  }

  input(line: string): void {
    if (this.phase === 'stopped') {
      // Any line asks for the gateway back (an empty one or /reconnect only that); a message is
      // kept and sent once the chat is attached again.
      if (line.trim() !== '' && line.trim() !== '/reconnect') this.lines.push(line);
      void this.reconnect('(starting the gateway again…)', true);
      return;
    }
    const title = /^\/title(?:\s+([\s\S]*))?$/.exec(line.trim());
    if (title) {
      // In order with other commands, once attached (piped lines arrive before the chat is).
      this.commanding = this.commanding
        .then(() => this.attached())
        .then(() => this.retitle(title[1]?.trim() ?? ''));
      return;
    }
    const steer = /^\/steer(?:\s+([\s\S]*))?$/.exec(line.trim());
    if (steer) {
      // Works while a turn runs (that is its point); its id is chosen now, so a repeat is the same steer.
      const submissionId = randomUUID();
      this.commanding = this.commanding
        .then(() => this.attached())
        .then(() => this.steer(steer[1]?.trim() ?? '', submissionId));
      return;
    }
    if (line.trim() === '/reconnect') {
      this.view.writeLine(this.options.style.dim('(connected to the gateway; nothing to reconnect)'));
      if (this.phase === 'ready') this.options.idle();
      return;
    }
    this.lines.push(line);
  }

  /**
   * The keys that answer the open approval at once (a terminal in raw mode), or null when no
   * approval is open: then keys are typed as usual.
   */
  singleKeys(): string[] | null {
    const open = this.view.openPrompt;
    if (this.phase !== 'ready' || open?.type !== 'approval.request') return null;
    return approvalKeys((open['choices'] as string[] | undefined) ?? ['once', 'deny']);
  }

  /** An approval or clarify question is open: what is typed answers it (no prompt in front). */
  asking(): boolean {
    return this.view.openPrompt !== null;
  }

  endOfInput(): void {
    this.lines.end();
    if (this.phase === 'stopped') void this.finish(); // piped input: nobody is left to ask for it back
  }

  /** Ctrl-C: interrupt the running turn; when idle, the second press leaves. */
  interrupt(): void {
    if (this.phase === 'closing') return this.resolveDone(130);
    this.lines.interrupt();
  }

  /** `/title <text>`: names the session (session.title); `gatehouse sessions` shows it. */
  private async retitle(title: string): Promise<void> {
    const say = (text: string) => this.view.writeLine(this.options.style.dim(text));
    if (title === '') say('Usage: /title <text> (names this session; gatehouse sessions shows it)');
    else if (this.phase !== 'ready') say('(not connected to the gateway; try /title again once it is back)');
    else {
      try {
        await this.call('session.title', { session_id: this.view.sessionId, title });
        say(`(this session is now titled: ${title})`);
      } catch (error) {
        this.options.warn(`gatehouse: could not set the title: ${(error as Error).message}`);
      }
    }
    if (this.phase === 'ready' && !this.view.inflight && !this.view.openPrompt) this.options.idle();
  }

  /**
   * `/steer <text>` (session.steer, issue 28): corrects the running turn before its next model call;
   * when the turn ends first, or none runs, the text is the next turn's input.
   */
  private async steer(text: string, submissionId: string): Promise<void> {
    const say = (line: string) => this.view.writeLine(this.options.style.dim(line));
    if (text === '') say('Usage: /steer <text> (corrects the running turn before its next model call)');
    else if (this.phase !== 'ready') say('(not connected to the gateway; try /steer again once it is back)');
    else {
      try {
        await this.call('session.steer', {
          session_id: this.view.sessionId,
          submission_id: submissionId,
          text,
        });
        say(
          this.view.running !== null || this.view.inflight
            ? '(steer saved: the running turn gets it before its next model call; if it ends first, it is the next message)'
            : '(steer saved: no turn is running, so it is sent as the next message)',
        );
      } catch (error) {
        this.options.warn(`gatehouse: could not steer: ${(error as Error).message}`);
      }
    }
    if (this.phase === 'ready' && !this.view.inflight && !this.view.openPrompt) this.options.idle();
  }

  // ---- the connection ------------------------------------------------------------------------------

  private attach(link: Link): void {
    this.link = link;
    link.client.onNotification((n) => this.receive(link, n));
    link.client.onClose((code) => {
      if (this.link !== link || this.phase === 'closing') return;
      if (this.stopping || code === CLOSE_GOING_AWAY) this.gatewayStopped(link.info.instance_id);
      else void this.reconnect('(lost the gateway; reconnecting…)', true);
    });
  }

  private call<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    if (!this.link) return Promise.reject(new ConnectionClosedError(1006));
    return this.link.client.call<T>(method, params);
  }

  /**
   * The gateway was stopped on purpose (`gatehouse stop`): the chat says so and waits instead of
   * starting it again. It reconnects once a gateway runs in the home again (another daemon than
   * the one that stopped), or when the user asks (a line, `/reconnect`); Ctrl-D still detaches.
   * A crash (any other close) still reconnects at once, starting the daemon again if need be.
   */
  private gatewayStopped(instanceId: string | null): void {
    this.phase = 'stopped';
    this.link = null;
    this.stopping = false;
    this.stoppedInstance = instanceId;
    this.view.writeLine(
      this.options.style.dim(
        '(the gateway was stopped. This chat waits and reconnects when it runs again; ' +
          'press Enter or type /reconnect to start it now, Ctrl-D to detach.)',
      ),
    );
    if (this.lines.ended) return void this.finish();
    this.options.idle();
    const timer = setInterval(() => {
      if (this.phase !== 'stopped') return clearInterval(timer);
      const state = gatewayState(this.options.layout);
      if (state.status !== 'running' || state.info.instance_id === this.stoppedInstance) return;
      clearInterval(timer);
      void this.reconnect('(the gateway is running again; reconnecting…)', false);
    }, COME_BACK_POLL_MS);
  }

  /** `start`: whether the chat may start a daemon itself (false: only join one that runs). */
  private async reconnect(first: string, start: boolean): Promise<void> {
    this.phase = 'connecting';
    this.link = null;
    this.view.writeLine(this.options.style.dim(first));
    let said = false;
    for (;;) {
      let link: Link | null;
      try {
        link = await reopenLink(this.options.layout, {
          start,
          giveUpMs: this.options.reconnectGiveUpMs ?? 120_000,
          cancelled: () => this.phase === 'closing',
          onRetry: (reason) => {
            if (!said) this.view.writeLine(this.options.style.dim(`(still reconnecting: ${reason})`));
            said = true;
          },
        });
      } catch (error) {
        // The gateway seen coming back went away again before the chat got in: wait on.
        if (!start) return this.gatewayStopped(this.stoppedInstance);
        return this.fail(new Error(`could not reach the gateway again: ${(error as Error).message}`));
      }
      if (link === null) return;
      this.attach(link);
      try {
        await this.catchUp.resync();
        this.view.writeLine(
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

  /** Resolves once the chat is attached and caught up, or is ending. */
  private attached(): Promise<void> {
    if (this.phase === 'ready' || this.phase === 'closing') return Promise.resolve();
    return new Promise((resolve) => this.waitingReady.push(resolve));
  }

  private releaseWaiting(): void {
    for (const resolve of this.waitingReady.splice(0)) resolve();
  }

  private ready(): void {
    this.phase = 'ready';
    this.releaseWaiting();
    void this.lines.pump();
  }

  private receive(link: Link, n: Notification): void {
    if (n.method === 'gateway.stopping' && link === this.link) {
      this.stopping = true;
      return this.view.writeLine(this.options.style.dim('(the gateway is stopping…)'));
    }
    if (n.method !== 'session.event' || link !== this.link) return;
    const e = n.params as Sequenced;
    if (e.session_id !== this.view.sessionId) return;
    if (this.phase !== 'ready' || this.view.position === null) return this.catchUp.hold(e);
    switch (this.catchUp.arrive(e)) {
      case 'applied':
        void this.lines.pump();
        break;
      case 'duplicate':
        break;
      case 'held':
        this.phase = 'connecting';
        this.catchUp
          .resync()
          .then(() => this.ready())
          .catch((error: unknown) => {
            // A drop is handled by the close listener; anything else ends the chat with one line.
            if (!(error instanceof ConnectionClosedError)) this.fail(error);
          });
    }
  }

  // ---- the end -------------------------------------------------------------------------------------

  private async finish(): Promise<void> {
    if (this.phase === 'closing') return;
    this.releaseWaiting(); // a command waiting to be attached answers that it is not
    await this.commanding;
    if ((this.phase as Phase) === 'closing') return;
    this.phase = 'closing';
    const link = this.link;
    const sessionId = this.view.sessionId;
    if (link && sessionId) {
      await link.client.call('session.detach', { session_id: sessionId }).catch(() => undefined);
      await link.client.close().catch(() => undefined);
    }
    this.view.endLine();
    this.options.write(resumeHint(sessionId ?? '?'));
    this.resolveDone(0);
  }

  /** Ends the chat on an error it cannot recover from: one line, the way back in, exit 1. */
  private fail(error: unknown): void {
    this.phase = 'closing';
    this.releaseWaiting();
    this.options.warn(`gatehouse: ${error instanceof Error ? error.message : String(error)}`);
    this.options.write(resumeHint(this.view.sessionId ?? '?'));
    void this.link?.client.close();
    this.resolveDone(1);
  }
}
