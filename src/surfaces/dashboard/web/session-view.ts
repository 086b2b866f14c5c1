/**
 * The session page: header (title, source, model, state, Interrupt), the transcript (markdown
 * rendered safely, tool calls collapsible with their output, reasoning dimmed, older pages on
 * demand), the live turn and its steer box, open prompts answered inline, the admission queue, and
 * the composer (Enter sends, Shift-Enter breaks the line, Esc interrupts).
 */
import { append, clear, count, h, when } from './dom.js';
import type { Link } from './link.js';
import { RpcError } from './link.js';
import { markdownElement } from './markdown.js';
import { promptCard } from './prompt-card.js';
import { actionsRow, type ActionHost } from './session-actions.js';
import { forkAt, ManagePanel, type ManageHost } from './session-manage.js';
import { DelegationsPanel } from './delegations-panel.js';
import { loadTimeline } from './turn-timeline.js';
import { SessionState, type Change, type ToolProgress } from './session-state.js';
import { SteerBox } from './steer-box.js';
import { UsagePanel } from './usage-panel.js';
import type { Message, PendingAdmission, Prompt } from './wire.js';

function toolArgs(args: string): string {
  try {
    const parsed = JSON.parse(args) as Record<string, unknown>;
    if (typeof parsed['command'] === 'string') return parsed['command'];
    return JSON.stringify(parsed, null, 2);
  } catch {
    return args;
  }
}

/** A tool call's card: its outcome at a glance (running, failed, done) and, inside, its output. */
function toolBlock(id: string, name: string, args: string, output: string | null, error = false) {
  const outcome = output === null ? 'running' : error ? 'failed' : 'done';
  return h(
    'details',
    {
      class: `tool${error ? ' tool-error' : ''}`,
      attrs: { 'data-tool-call': id, 'data-outcome': outcome },
    },
    h(
      'summary',
      {},
      h('span', { class: `outcome outcome-${outcome} tool-status`, text: outcome }),
      ' ',
      h('span', { class: 'tool-name', text: name }),
      ' ',
      h('code', { text: toolArgs(args) }),
    ),
    h('pre', { class: 'tool-output', text: output ?? 'running…' }),
  );
}

/** Fills a card with what its tool has printed so far, and opens it: the output streams in view. */
function showProgress(block: Element, progress: ToolProgress): void {
  if (!(block instanceof HTMLDetailsElement) || block.dataset['outcome'] !== 'running') return;
  if (!block.dataset['streamed'] && !block.open) {
    // Opened for the run only: it folds again when it settles, unless the user toggled it.
    block.open = true;
    block.dataset['autoOpened'] = '1';
    block.querySelector('summary')?.addEventListener('click', () => delete block.dataset['autoOpened']);
  }
  block.dataset['streamed'] = '1';
  const pre = block.querySelector('pre.tool-output');
  if (pre) pre.textContent = progress.lines.join('\n');
  const status = block.querySelector('.tool-status');
  if (status)
    status.textContent = `running · ${(progress.elapsed_ms / 1000).toFixed(1)} s · ${count(progress.bytes)} bytes`;
}

/** Settles a card when its tool's output is stored. */
function settleBlock(block: Element, output: string): void {
  block.setAttribute('data-outcome', 'done');
  if (block instanceof HTMLDetailsElement && block.dataset['autoOpened']) {
    block.open = false;
    delete block.dataset['autoOpened'];
  }
  const pre = block.querySelector('pre.tool-output');
  if (pre) pre.textContent = output;
  const status = block.querySelector('.tool-status');
  if (status) {
    status.className = 'outcome outcome-done tool-status';
    status.textContent = 'done';
  }
}

/** The window is scrolled to (nearly) the end of the page. */
function atBottom(): boolean {
  return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
}

const PAGE_TITLE = 'Gatehouse';

export function messageElement(
  m: Message,
  outputs: Map<string, Message>,
  onFork?: (m: Message) => void,
  onTimeline?: (m: Message, el: HTMLElement) => void,
): HTMLElement | null {
  if (m.role === 'tool') return null; // shown inside its call
  if (m.role === 'system') return null;
  const el = h('article', {
    class: `msg msg-${m.role}`,
    attrs: { 'data-role': m.role, ...(typeof m.id === 'number' ? { 'data-message-id': String(m.id) } : {}) },
  });
  if (m.reasoning) append(el, h('div', { class: 'reasoning', text: m.reasoning }));
  if (m.steer_id) {
    el.classList.add('msg-steer');
    append(el, h('span', { class: 'steer-mark', text: 'steer' }));
  }
  if (m.content)
    append(el, m.role === 'user' ? h('div', { class: 'text', text: m.content }) : markdownElement(m.content));
  for (const call of m.tool_calls ?? []) {
    const output = outputs.get(call.id);
    append(el, toolBlock(call.id, call.function.name, call.function.arguments, output?.content ?? null));
  }
  if (!el.firstChild) return null;
  if (m.timestamp) append(el, h('time', { class: 'stamp', text: when(m.timestamp) }));
  if (onTimeline && m.role === 'user' && m.admission_id)
    append(
      el,
      h('button', {
        type: 'button',
        class: 'link timeline-open',
        text: 'Timeline',
        title: 'What this turn did, step by step',
        on: { click: () => onTimeline(m, el) },
      }),
    );
  if (onFork)
    append(
      el,
      h('button', {
        type: 'button',
        class: 'link fork',
        text: 'Fork',
        title: 'A new session with the history up to here',
        on: { click: () => onFork(m) },
      }),
    );
  return el;
}

export class SessionView {
  readonly root: HTMLElement;
  private readonly state: SessionState;
  private readonly header = h('div', { class: 'session-head' });
  private readonly older = h('div', { class: 'older' });
  private readonly transcript = h('div', { class: 'transcript', attrs: { 'aria-live': 'polite' } });
  private readonly live = h('div', { class: 'live' });
  private readonly prompts = h('div', { class: 'prompts' });
  private readonly queue = h('div', { class: 'queue' });
  private readonly error = h('p', { class: 'error', attrs: { role: 'alert' } });
  /** What the last session action did; kept until the next one (or the next message). */
  private readonly note = h('p', { class: 'notice action-note', attrs: { role: 'status' } });
  private readonly asking = { label: null as string | null };
  private readonly host: ActionHost;
  private readonly manage: ManagePanel;
  private readonly steer: SteerBox;
  private readonly delegations: DelegationsPanel;
  private readonly usage: UsagePanel;
  private readonly manageHost: ManageHost;
  private readonly input = h('textarea', {
    class: 'composer-input',
    attrs: {
      rows: '2',
      placeholder: 'Message (Enter sends, Shift-Enter new line, Esc interrupts)',
      'aria-label': 'Message',
    },
  });
  private shown = 0;
  private frame = 0;
  private readonly unlisten: () => void;
  /** Follow new activity (keep the end in view) until the user scrolls up; "Jump to latest" resumes. */
  private following = true;
  private readonly jump = h('button', {
    type: 'button',
    class: 'jump-latest',
    text: 'Jump to latest',
    hidden: true,
    on: { click: () => this.toLatest() },
  });
  private readonly onScroll = () => {
    this.following = atBottom();
    if (this.following) this.jump.hidden = true;
  };
  /** Prompts already brought into view (and notified): each is announced once. */
  private readonly announced = new Set<string>();
  private primed = false;
  private readonly notifyAsk = h('button', {
    type: 'button',
    class: 'link notify-ask',
    text: 'Notify me when a turn waits for an answer',
    hidden: !('Notification' in window) || Notification.permission !== 'default',
    on: {
      click: () =>
        void Notification.requestPermission().then(() => {
          this.notifyAsk.hidden = Notification.permission !== 'default';
        }),
    },
  });

  constructor(
    sessionId: string,
    link: Link,
    /** A message to open the session at (a search hit), by its stored id. */
    private readonly focus: number | null = null,
  ) {
    this.state = new SessionState(sessionId, link);
    this.unlisten = this.state.onChange((change) => this.redraw(change));
    this.host = {
      state: this.state,
      notice: (text) => {
        this.error.textContent = '';
        this.note.textContent = text;
      },
      fail: (error) => this.fail(error),
      refill: (text) => {
        if (this.input.value.trim() === '') this.input.value = text;
        this.input.focus();
      },
    };
    this.manageHost = {
      link,
      sessionId,
      title: () => this.state.info?.title ?? null,
      renamed: (title) => {
        if (this.state.info) this.state.info.title = title;
        this.drawHeader();
      },
      notice: (text) => this.host.notice(text),
      fail: (error) => this.fail(error),
      go: (hash) => (location.hash = hash),
    };
    this.manage = new ManagePanel(this.manageHost);
    this.steer = new SteerBox(this.host);
    this.delegations = new DelegationsPanel(this.manageHost);
    this.usage = new UsagePanel(link, sessionId);
    const composer = h(
      'form',
      {
        class: 'composer',
        on: {
          submit: (e) => {
            e.preventDefault();
            this.send();
          },
        },
      },
      this.input,
      h('button', { type: 'submit', text: 'Send' }),
    );
    this.input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        this.send();
      } else if (e.key === 'Escape') {
        e.preventDefault();
        void this.state.interrupt().catch((error: unknown) => this.fail(error));
      }
    });
    this.root = h(
      'section',
      { class: 'session' },
      this.header,
      this.usage.root,
      this.manage.root,
      this.delegations.root,
      this.note,
      this.older,
      this.transcript,
      this.live,
      this.steer.root,
      this.prompts,
      this.queue,
      this.error,
      composer,
      this.notifyAsk,
      this.jump,
    );
    window.addEventListener('scroll', this.onScroll, { passive: true });
  }

  get sessionId(): string {
    return this.state.sessionId;
  }

  attach(): Promise<void> {
    const first = this.state.position === null;
    return this.state
      .attach()
      .then(() => (first && this.focus !== null ? this.reveal(this.focus) : undefined))
      .then(() => this.manage.load())
      .then(() => this.delegations.load())
      .catch((error: unknown) => this.fail(error));
  }

  /** Scrolls to a stored message (a search hit), reading earlier pages until it is shown. */
  private async reveal(messageId: number): Promise<void> {
    for (;;) {
      const message = this.state.messages.find((m) => m.id === messageId);
      const el =
        message?.role === 'tool' && message.tool_call_id
          ? this.transcript.querySelector(`details[data-tool-call="${CSS.escape(message.tool_call_id)}"]`)
          : this.transcript.querySelector(`[data-message-id="${messageId}"]`);
      if (el) {
        if (el instanceof HTMLDetailsElement) el.open = true;
        el.classList.add('hit');
        this.following = false;
        el.scrollIntoView({ block: 'center' });
        return;
      }
      const oldest = this.state.messages.find((m) => typeof m.id === 'number')?.id;
      if (!this.state.hasOlder || oldest === undefined || oldest <= messageId) break;
      await this.state.loadOlder();
    }
    this.host.notice(
      'The message found is in an earlier part of this session (before a reset or a compression); the lineage names those parts.',
    );
  }

  arrive(params: Record<string, unknown>): void {
    this.state.arrive(params as { epoch: number; seq: number; event: { type: string } });
  }

  close(): void {
    this.unlisten();
    this.state.detach();
    window.removeEventListener('scroll', this.onScroll);
    document.title = PAGE_TITLE;
  }

  /** Keeps the newest activity in view while following; otherwise offers "Jump to latest". */
  private follow(): void {
    if (this.following) window.scrollTo(0, document.documentElement.scrollHeight);
    else this.jump.hidden = false;
  }

  private toLatest(): void {
    this.following = true;
    this.jump.hidden = true;
    window.scrollTo(0, document.documentElement.scrollHeight);
  }

  private send(): void {
    const text = this.input.value;
    if (text.trim() === '') return;
    this.input.value = '';
    this.error.textContent = '';
    this.note.textContent = '';
    this.state.submit(text).catch((error: unknown) => {
      this.input.value = text;
      this.fail(error);
    });
  }

  private fail(error: unknown): void {
    this.note.textContent = '';
    this.error.textContent =
      error instanceof RpcError
        ? `${error.message} (${error.reason})`
        : error instanceof Error
          ? error.message
          : String(error);
  }

  private redraw(change: Change): void {
    switch (change) {
      case 'all':
        this.drawHeader();
        this.drawTranscript(true);
        this.drawLive();
        this.drawPrompts();
        this.drawQueue();
        // A new snapshot: after a compression, a reset or a reconnect the context is another.
        return this.usage.refresh();
      case 'usage':
        return this.usage.refresh();
      case 'messages':
        return this.drawTranscript(false);
      case 'older':
        return this.drawTranscript(true);
      case 'live':
        // Deltas arrive many times a second: draw at most once per frame.
        if (this.frame === 0) this.frame = requestAnimationFrame(() => ((this.frame = 0), this.drawLive()));
        return;
      case 'prompts':
        return this.drawPrompts();
      case 'admissions':
        // A delegation's result arrives as an admission; one the model started, after its turn.
        void this.delegations.load();
        return this.drawQueue();
      case 'header':
        return this.drawHeader();
    }
  }

  private drawHeader(): void {
    const s = this.state;
    const info = s.info;
    this.steer.update();
    clear(this.header);
    append(
      this.header,
      h('h1', { text: info?.title ?? s.sessionId }),
      h(
        'p',
        { class: 'meta' },
        h('span', { class: `state state-${s.state}`, attrs: { 'data-state': s.state }, text: s.state }),
        ` ${info?.source ?? ''}${info?.platform && info.platform !== info.source ? ` · ${info.platform}` : ''} · ${info?.model ?? 'default model'}`,
        info?.cwd ? ` · ${info.cwd}` : '',
        info?.editor ? h('span', { class: 'editor', text: ` · from ${info.editor}` }) : null,
      ),
      s.pausedReason ? h('p', { class: 'error', text: `Paused: ${s.pausedReason}` }) : null,
      s.running
        ? h('button', {
            type: 'button',
            class: 'danger',
            text: 'Interrupt',
            on: { click: () => void s.interrupt().catch((e: unknown) => this.fail(e)) },
          })
        : null,
      actionsRow(this.host, this.asking, () => this.drawHeader()),
    );
  }

  private drawTranscript(full: boolean): void {
    const messages = this.state.messages;
    if (full) {
      clear(this.transcript);
      this.shown = 0;
    }
    const outputs = new Map<string, Message>();
    for (const m of messages) if (m.role === 'tool' && m.tool_call_id) outputs.set(m.tool_call_id, m);
    for (const m of messages.slice(this.shown)) {
      if (m.role === 'tool' && m.tool_call_id) {
        // A tool's output fills the block its call drew.
        const block = this.transcript.querySelector(
          `details[data-tool-call="${CSS.escape(m.tool_call_id)}"] pre`,
        );
        if (block) {
          settleBlock(block.parentElement!, m.content ?? '');
          continue;
        }
      }
      const el = messageElement(
        m,
        outputs,
        (message) => void forkAt(this.manageHost, message).catch((error: unknown) => this.fail(error)),
        (message, at) => void this.toggleTimeline(message, at).catch((error: unknown) => this.fail(error)),
      );
      if (el) this.transcript.appendChild(el);
    }
    this.shown = messages.length;
    clear(this.older);
    if (this.state.hasOlder) {
      append(
        this.older,
        h('button', {
          type: 'button',
          class: 'link',
          text: 'Load earlier messages',
          on: { click: () => void this.state.loadOlder().catch((e: unknown) => this.fail(e)) },
        }),
      );
    }
    this.drawProgress();
    if (!full || this.focus === null) this.follow();
  }

  /** Opens (or closes) the flight recorder of a message's turn right after the message. */
  private async toggleTimeline(m: Message, at: HTMLElement): Promise<void> {
    const next = at.nextElementSibling;
    if (next?.classList.contains('timeline')) return void next.remove();
    const timeline = await loadTimeline(this.manageHost.link, this.state.sessionId, m.admission_id!);
    if (timeline) at.after(timeline);
  }

  private drawLive(): void {
    const live = this.state.live;
    clear(this.live);
    if (live.reasoning) append(this.live, h('div', { class: 'reasoning', text: live.reasoning }));
    if (live.text) append(this.live, markdownElement(live.text, 'md streaming'));
    for (const t of live.tools)
      append(this.live, toolBlock(t.tool_call_id, t.name, t.arguments, t.summary, t.is_error));
    this.live.hidden = !this.live.firstChild;
    this.drawProgress();
    this.follow();
  }

  /** Running tools' output, streamed into their cards wherever they are drawn. */
  private drawProgress(): void {
    for (const [id, progress] of this.state.progress) {
      const selector = `details[data-tool-call="${CSS.escape(id)}"]`;
      for (const block of this.root.querySelectorAll(selector)) showProgress(block, progress);
    }
  }

  private drawPrompts(): void {
    clear(this.prompts);
    for (const notice of this.state.notices.splice(0))
      append(this.prompts, h('p', { class: 'notice', text: notice }));
    let arrived: HTMLElement | null = null;
    for (const p of this.state.prompts) {
      const card = promptCard(
        p,
        (value) => void this.state.answer(p, value).catch((e: unknown) => this.fail(e)),
      );
      append(this.prompts, card);
      if (this.announced.has(p.prompt_id)) continue;
      this.announced.add(p.prompt_id);
      arrived ??= card;
      // One that was waiting when the page opened is shown, not announced again.
      if (this.primed) this.notify(p);
    }
    this.primed = true;
    const waiting = this.state.prompts.length;
    const title = this.state.info?.title ?? this.state.sessionId;
    document.title = waiting > 0 ? `(${waiting}) Waiting for you · ${title} · ${PAGE_TITLE}` : PAGE_TITLE;
    // A prompt that waits is brought into view, whether or not the page was following.
    if (arrived) arrived.scrollIntoView({ block: 'center' });
  }

  /** A browser notification for a prompt that arrived, when the user allowed them. */
  private notify(p: Prompt): void {
    if (!('Notification' in window) || Notification.permission !== 'granted') return;
    const title = this.state.info?.title ?? this.state.sessionId;
    const body =
      p.type === 'approval.request'
        ? `Approve? ${p.command ?? p.reason ?? ''}`.trim()
        : `Question: ${p.question ?? ''}`.trim();
    const shown = new Notification(`Gatehouse · ${title}`, { body, tag: p.prompt_id });
    shown.onclick = () => {
      window.focus();
      this.prompts.scrollIntoView({ block: 'center' });
    };
  }

  private drawQueue(): void {
    clear(this.queue);
    const rows = this.state.admissions.filter((a) => a.state !== 'running');
    const unsent = this.state.unsent.filter((s) => !s.acknowledged);
    if (rows.length === 0 && unsent.length === 0) return;
    const list = h('ul', {});
    for (const a of rows) list.appendChild(this.admissionRow(a));
    for (const s of unsent)
      list.appendChild(h('li', { class: 'unsent', text: `sending after reconnect: ${s.text}` }));
    append(this.queue, h('h2', { text: 'Waiting' }), list);
  }

  private admissionRow(a: PendingAdmission): HTMLElement {
    const label = a.text ? `${a.text.slice(0, 80)}` : a.admission_id;
    if (a.state === 'unknown') {
      return h(
        'li',
        { class: 'unknown', attrs: { 'data-admission': a.admission_id } },
        h('span', { class: 'state state-unknown', text: 'unknown' }),
        ` ${label} — it was running when the gateway stopped; it may or may not have finished. `,
        h('button', {
          type: 'button',
          text: 'Resolve',
          on: { click: () => void this.state.resolveUnknown(a).catch((e: unknown) => this.fail(e)) },
        }),
      );
    }
    return h(
      'li',
      { class: 'queued', attrs: { 'data-admission': a.admission_id } },
      h('span', { class: 'state state-queued', text: 'queued' }),
      ` ${label} `,
      h('button', {
        type: 'button',
        class: 'link',
        text: 'Cancel',
        on: { click: () => void this.state.cancel(a.admission_id).catch((e: unknown) => this.fail(e)) },
      }),
    );
  }
}
