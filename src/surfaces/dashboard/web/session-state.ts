/**
 * One open session as the page knows it, kept exactly-once across reconnects with the CLI's own
 * cursor rules (../../cli/chat/cursor.ts): an event right after the cursor is applied, one at or
 * below it is a duplicate, one further ahead (or of another epoch) means resync. A resync replays
 * `session.events.since` while the daemon still buffers the gap, else rebuilds from a fresh
 * `session.resume` snapshot — whose messages replace what is shown, so nothing shows twice and no
 * completed message is lost. No DOM here: the view subscribes to `changed`.
 */
import { compressionNotice } from '../../../domain/session/compression-notice.js';
import { classifyArrival, planResync, unseenEvents, type CursorPosition } from '../../cli/chat/cursor.js';
import { RpcError, type Link } from './link.js';
import type {
  Message,
  PendingAdmission,
  Prompt,
  Sequenced,
  SessionInfo,
  Snapshot,
  WireEvent,
} from './wire.js';

/** How many messages a session opens with; older pages load on demand (session.messages). */
export const FIRST_PAGE = 100;

/** What identifies a stored message in its turn (message.stored carries no store id). */
function messageKey(m: Message): string {
  return JSON.stringify([
    m.admission_id ?? null,
    m.role,
    m.content,
    m.tool_call_id ?? null,
    m.tool_calls?.map((c) => c.id) ?? [],
  ]);
}

export interface LiveTool {
  tool_call_id: string;
  name: string;
  arguments: string;
  summary: string | null;
  is_error: boolean;
}

/** What a running tool has printed so far, from its `tool.output` events. */
export interface ToolProgress {
  /** The reported lines, the newest last, at most LIVE_LINES. */
  lines: string[];
  elapsed_ms: number;
  bytes: number;
}

/** How many reported lines a running tool's card keeps (the daemon keeps only a tail, too). */
export const LIVE_LINES = 50;

/** What changed, so the view redraws only that part. */
/** `usage`: a turn settled, so the context meter and the costs are read again. */
export type Change = 'all' | 'messages' | 'older' | 'live' | 'prompts' | 'admissions' | 'header' | 'usage';

export interface Submission {
  submissionId: string;
  text: string;
  acknowledged: boolean;
}

export class SessionState {
  info: SessionInfo | null = null;
  messages: Message[] = [];
  hasOlder = false;
  position: CursorPosition | null = null;
  state = 'idle';
  pausedReason: string | null = null;
  running: { admission_id: string; generation: number } | null = null;
  generation = 0;
  admissions: PendingAdmission[] = [];
  prompts: Prompt[] = [];
  live = { text: '', reasoning: '', tools: [] as LiveTool[] };
  /** Running tools' printed output by tool_call_id (`tool.output`), until their result is stored. */
  readonly progress = new Map<string, ToolProgress>();
  /** Our submissions not yet acknowledged with a receipt: resent with the same id after a reconnect. */
  unsent: Submission[] = [];
  /** Answers to prompts that another viewer had already given. */
  notices: string[] = [];
  /** What session.model may choose (`provider/model`), from runtime.describe; loaded on demand. */
  modelChoices: string[] | null = null;
  private held: Sequenced[] = [];
  private syncing = false;
  /** A reset, undo or compression was applied while syncing: take a fresh snapshot after it. */
  private replaced = false;
  /** Snapshot messages of the running turn whose message.stored may still arrive (messageKey). */
  private echoes: { admission_id: string; key: string }[] = [];
  private readonly listeners = new Set<(change: Change) => void>();

  constructor(
    readonly sessionId: string,
    private readonly link: Link,
  ) {}

  onChange(listener: (change: Change) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(change: Change): void {
    for (const l of this.listeners) l(change);
  }

  /**
   * Attach (and, after a reconnect, catch up), then send what was never acknowledged. `fresh`
   * rebuilds from the snapshot even when the cursor could replay: after a reset, an undo or a
   * compression the shown transcript is no longer the one the events built.
   */
  async attach(fresh = false): Promise<void> {
    this.syncing = true;
    try {
      for (let round = 0; round < 3; round++) {
        const snapshot = await this.link.call<Snapshot>('session.resume', {
          session_id: this.sessionId,
          message_limit: FIRST_PAGE,
        });
        const plan = fresh ? { kind: 'snapshot' as const } : planResync(this.position, snapshot.epoch);
        if (plan.kind === 'replay') {
          try {
            const since = await this.link.call<{ events: Sequenced[] }>('session.events.since', {
              session_id: this.sessionId,
              epoch: plan.epoch,
              after_seq: plan.afterSeq,
            });
            for (const e of unseenEvents(since.events, this.position!.lastSeq)) {
              this.position = { epoch: plan.epoch, lastSeq: e.seq };
              this.apply(e.event);
            }
          } catch (error) {
            if (!(error instanceof RpcError && error.reason === 'snapshot_required')) throw error;
            this.fromSnapshot(snapshot);
          }
        } else {
          this.fromSnapshot(snapshot);
        }
        if (!this.drainHeld()) continue;
        if (!this.replaced) break;
        this.replaced = false;
        fresh = true;
      }
    } finally {
      this.syncing = false;
      this.replaced = false;
    }
    await this.resendUnacknowledged();
  }

  /** A `session.event` notification for this session. */
  arrive(params: { epoch: number; seq: number; event: WireEvent }): void {
    const e: Sequenced = { seq: params.seq, event: params.event };
    if (this.syncing || this.position === null) {
      this.held.push({ ...e, epoch: params.epoch } as Sequenced & { epoch: number });
      return;
    }
    const arrival = classifyArrival(this.position, params.epoch, params.seq);
    if (arrival === 'apply') {
      this.position = { epoch: params.epoch, lastSeq: params.seq };
      this.apply(params.event);
    } else if (arrival !== 'duplicate') {
      this.held.push({ ...e, epoch: params.epoch } as Sequenced & { epoch: number });
      void this.attach().catch(() => undefined);
    }
  }

  /** Applies held events in order; false when a gap remains. */
  private drainHeld(): boolean {
    const held = (this.held as (Sequenced & { epoch: number })[]).sort((a, b) => a.seq - b.seq);
    this.held = [];
    for (const e of held) {
      const arrival = classifyArrival(this.position!, e.epoch, e.seq);
      if (arrival === 'duplicate') continue;
      if (arrival !== 'apply') return false;
      this.position = { epoch: e.epoch, lastSeq: e.seq };
      this.apply(e.event);
    }
    return true;
  }

  private fromSnapshot(s: Snapshot): void {
    // A message a running or queued turn stored just before the snapshot was read may still be
    // announced after it (the store writes, then publishes; a retry stores its input when it is
    // admitted and announces it when the turn starts): that announcement is already shown.
    const unsettled = new Set(s.pending_admissions.map((a) => a.admission_id));
    if (s.running) unsettled.add(s.running.admission_id);
    this.echoes = s.messages
      .filter((m) => m.admission_id !== undefined && unsettled.has(m.admission_id))
      .map((m) => ({ admission_id: m.admission_id!, key: messageKey(m) }));
    this.info = s.info;
    this.messages = s.messages;
    this.hasOlder = s.messages_truncated === true;
    this.position = { epoch: s.epoch, lastSeq: s.last_seq };
    this.state = s.state;
    this.pausedReason = s.paused_reason;
    this.running = s.running;
    this.generation = s.execution_generation;
    this.admissions = s.pending_admissions;
    this.prompts = s.prompts;
    this.live = { text: '', reasoning: '', tools: [] };
    this.changed('all');
  }

  /** One event, in order. Every completed message arrives as message.stored exactly once. */
  private apply(e: WireEvent): void {
    switch (e.type) {
      case 'admission.queued':
        if (!this.admissions.some((a) => a.admission_id === e['admission_id'])) {
          this.admissions.push({
            admission_id: String(e['admission_id']),
            submission_id: String(e['submission_id']),
            state: 'queued',
            ...(typeof e['text'] === 'string' ? { text: e['text'] } : {}),
          });
        }
        return this.changed('admissions');
      case 'turn.start': {
        const generation = Number(e['execution_generation']);
        this.running = { admission_id: String(e['admission_id']), generation };
        this.generation = generation;
        this.state = 'running';
        for (const a of this.admissions) if (a.admission_id === e['admission_id']) a.state = 'running';
        this.live = { text: '', reasoning: '', tools: [] };
        this.changed('admissions');
        return this.changed('header');
      }
      case 'text.delta':
        this.live.text += String(e['text']);
        return this.changed('live');
      case 'reasoning.delta':
        this.live.reasoning += String(e['text']);
        return this.changed('live');
      case 'tool.start':
        // The stored assistant message already draws this call (its output fills in when stored).
        if (this.messages.some((m) => m.tool_calls?.some((c) => c.id === e['tool_call_id']))) return;
        this.live.tools.push({
          tool_call_id: String(e['tool_call_id']),
          name: String(e['name']),
          arguments: typeof e['arguments'] === 'string' ? e['arguments'] : '',
          summary: null,
          is_error: false,
        });
        return this.changed('live');
      case 'tool.output': {
        // Bounded: one entry per running call (dropped when its output is stored), LIVE_LINES each.
        const id = String(e['tool_call_id']);
        const progress = this.progress.get(id) ?? { lines: [], elapsed_ms: 0, bytes: 0 };
        const line = typeof e['last_line'] === 'string' ? e['last_line'] : '';
        if (line !== '' && progress.lines.at(-1) !== line) progress.lines.push(line);
        if (progress.lines.length > LIVE_LINES) progress.lines.splice(0, progress.lines.length - LIVE_LINES);
        if (typeof e['elapsed_ms'] === 'number') progress.elapsed_ms = e['elapsed_ms'];
        if (typeof e['bytes'] === 'number') progress.bytes = e['bytes'];
        this.progress.set(id, progress);
        return this.changed('live');
      }
      case 'tool.complete': {
        const tool = this.live.tools.find((t) => t.tool_call_id === e['tool_call_id']);
        if (tool) {
          tool.summary = typeof e['summary'] === 'string' ? e['summary'] : '';
          tool.is_error = e['is_error'] === true;
        }
        return this.changed('live');
      }
      case 'message.stored': {
        const message = e['message'] as Message;
        const key = messageKey(message);
        const echo = this.echoes.findIndex((x) => x.key === key);
        if (echo >= 0) {
          this.echoes.splice(echo, 1);
          return;
        }
        // A live message carries no time of its own: it was stored as it arrived.
        this.messages.push(message.timestamp ? message : { ...message, timestamp: new Date().toISOString() });
        // The stored message is what was streaming: stop showing the live copy of it.
        if (message.role === 'assistant') this.live = { ...this.live, text: '', reasoning: '' };
        if (message.role === 'tool' && message.tool_call_id) this.progress.delete(message.tool_call_id);
        if (message.role === 'tool')
          this.live.tools = this.live.tools.filter((t) => t.tool_call_id !== message.tool_call_id);
        this.changed('messages');
        return this.changed('live');
      }
      case 'approval.request':
      case 'clarify.request':
        if (!this.prompts.some((p) => p.prompt_id === e['prompt_id']))
          this.prompts.push(e as unknown as Prompt);
        return this.changed('prompts');
      case 'approval.settled':
      case 'clarify.settled':
        this.prompts = this.prompts.filter((p) => p.prompt_id !== e['prompt_id']);
        return this.changed('prompts');
      case 'turn.complete':
        this.live = { text: '', reasoning: '', tools: [] };
        this.progress.clear();
        this.changed('live');
        return;
      case 'session.model':
        // Any viewer's change (this page's, a chat's /model): the header follows it.
        if (this.info)
          this.info = { ...this.info, model: String(e['model']), provider: String(e['provider']) };
        return this.changed('header');
      case 'session.reset':
      case 'transcript.rewound':
      case 'session.compressed':
        // Said with the new transcript: the snapshot below redraws everything, notices with it.
        if (e.type === 'session.compressed') this.notices.push(compressionNotice(e));
        // The transcript was replaced under the cursor: show the daemon's new one.
        if (this.syncing) this.replaced = true;
        else void this.attach(true).catch(() => undefined);
        return;
      case 'admission.settled':
        this.echoes = this.echoes.filter((x) => x.admission_id !== e['admission_id']);
        this.admissions = this.admissions.filter((a) => a.admission_id !== e['admission_id']);
        if (this.running?.admission_id === e['admission_id']) {
          this.running = null;
          this.state = this.admissions.some((a) => a.state === 'unknown') ? 'unknown' : 'idle';
        }
        this.changed('admissions');
        this.changed('usage');
        return this.changed('header');
      default:
        return;
    }
  }

  /** Older messages, one page before the oldest shown. */
  async loadOlder(): Promise<void> {
    const oldest = this.messages.find((m) => typeof m.id === 'number');
    if (!oldest?.id) return;
    const page = await this.link.call<{ messages: Message[]; has_more: boolean }>('session.messages', {
      session_id: this.sessionId,
      before_id: oldest.id,
      limit: FIRST_PAGE,
    });
    this.messages = [...page.messages, ...this.messages];
    this.hasOlder = page.has_more;
    this.changed('older');
  }

  /**
   * Sends `text` with a fresh submission_id. When the connection drops before the receipt, the
   * same id is sent again after the reconnect: the daemon answers a repeat with the first receipt
   * (`duplicate: true`), so the input runs once however often it is sent.
   */
  async submit(text: string): Promise<void> {
    const submission: Submission = { submissionId: crypto.randomUUID(), text, acknowledged: false };
    this.unsent.push(submission);
    await this.send(submission);
  }

  /**
   * Steers the running turn (session.steer) with a fresh submission_id; true when a turn was running
   * as it was sent (it gets the steer at its next boundary, or the steer is the next message).
   */
  async steer(text: string): Promise<boolean> {
    const running = this.running !== null;
    await this.link.call('session.steer', {
      session_id: this.sessionId,
      submission_id: crypto.randomUUID(),
      text,
    });
    return running;
  }

  private async send(submission: Submission): Promise<void> {
    try {
      await this.link.call('prompt.submit', {
        session_id: this.sessionId,
        submission_id: submission.submissionId,
        text: submission.text,
      });
      submission.acknowledged = true;
      this.unsent = this.unsent.filter((s) => s !== submission);
    } catch (error) {
      if (error instanceof RpcError) {
        this.unsent = this.unsent.filter((s) => s !== submission);
        throw error;
      }
      // Disconnected: kept in `unsent`, sent again by attach() after the reconnect.
    }
    this.changed('admissions');
  }

  private async resendUnacknowledged(): Promise<void> {
    for (const submission of [...this.unsent]) await this.send(submission);
  }

  interrupt(): Promise<unknown> {
    if (!this.running) return Promise.resolve(null);
    return this.link.call('session.interrupt', {
      session_id: this.sessionId,
      execution_generation: this.running.generation,
    });
  }

  cancel(admissionId: string): Promise<unknown> {
    return this.link.call('prompt.cancel', { session_id: this.sessionId, admission_id: admissionId });
  }

  async resolveUnknown(admission: PendingAdmission): Promise<void> {
    await this.link.call('prompt.resolve_unknown', {
      session_id: this.sessionId,
      admission_id: admission.admission_id,
      execution_generation: admission.execution_generation ?? this.generation,
    });
    this.admissions = this.admissions.filter((a) => a.admission_id !== admission.admission_id);
    if (!this.admissions.some((a) => a.state === 'unknown') && this.state === 'unknown') this.state = 'idle';
    this.changed('admissions');
    this.changed('header');
  }

  /** Answers a prompt; a prompt another viewer answered first is reported, not an error. */
  async answer(prompt: Prompt, value: string | string[]): Promise<void> {
    const method = prompt.type === 'approval.request' ? 'approval.respond' : 'clarify.respond';
    const field = prompt.type === 'approval.request' ? 'choice' : 'answer';
    const result = await this.link.call<{ status: string }>(method, {
      session_id: this.sessionId,
      execution_generation: prompt.execution_generation,
      prompt_id: prompt.prompt_id,
      [field]: value,
    });
    if (result.status === 'already_resolved') {
      this.notices.push('That prompt was already answered elsewhere.');
      this.prompts = this.prompts.filter((p) => p.prompt_id !== prompt.prompt_id);
      this.changed('prompts');
    }
  }

  /** session.compress now (in the turn slot); says what the model sees afterwards. */
  async compress(): Promise<string> {
    const r = await this.link.call<{ compressed: boolean; messages?: number; why?: string }>(
      'session.compress',
      { session_id: this.sessionId },
    );
    return r.compressed
      ? `Compressed: the model now sees ${r.messages} messages, the summary among them.`
      : `Not compressed: ${r.why}.`;
  }

  /** The configured providers' models as `provider/model`, for the Model chooser. */
  async loadModelChoices(): Promise<string[]> {
    const described = await this.link.call<{
      session_create?: { providers?: { name: string; models: string[] }[] };
    }>('runtime.describe');
    const providers = described.session_create?.providers ?? [];
    this.modelChoices = providers.flatMap((p) => p.models.map((m) => `${p.name}/${m}`));
    return this.modelChoices;
  }

  /** session.model: the session's next turns run on `provider/model`. */
  async changeModel(choice: string): Promise<string> {
    const slash = choice.indexOf('/');
    const provider = choice.slice(0, slash);
    const model = choice.slice(slash + 1);
    const r = await this.link.call<{ changed: boolean }>('session.model', {
      session_id: this.sessionId,
      provider,
      model,
    });
    return r.changed
      ? `The session now runs on ${provider}/${model}: its next turns go there.`
      : `The session already runs on ${provider}/${model}.`;
  }

  /** session.reset: the same session continues on an empty history. */
  async reset(): Promise<string> {
    await this.link.call('session.reset', { session_id: this.sessionId, request_id: crypto.randomUUID() });
    return 'The history was reset: the session continues from an empty conversation.';
  }

  /** session.undo of the last turn; its text comes back for editing. */
  async undo(): Promise<{ notice: string; text: string | null }> {
    const r = await this.link.call<{ turns_undone: number; target_text: string | null }>('session.undo', {
      session_id: this.sessionId,
      request_id: crypto.randomUUID(),
    });
    return {
      notice: r.turns_undone === 0 ? 'Nothing to undo.' : 'The last turn was undone.',
      text: r.target_text ?? null,
    };
  }

  /** session.retry: the last message is undone and admitted again. */
  async retry(): Promise<string> {
    await this.link.call('session.retry', { session_id: this.sessionId, request_id: crypto.randomUUID() });
    return 'Sent the last message again.';
  }

  detach(): void {
    void this.link.call('session.detach', { session_id: this.sessionId }).catch(() => undefined);
  }
}
