/**
 * Managing the open session (issue 31), below its header: its id and the `gatehouse chat --resume`
 * line to copy, Rename (session.title), Archive / Unarchive (session.archive), Delete
 * (session.delete, asked first), and its lineage (session.lineage): the session it was forked
 * from, its compressions and resets, and the sessions forked from it. Fork is offered on each
 * message (forkAt). Everything goes through the same RPC methods as the CLI.
 */
import { append, clear, h, when } from './dom.js';
import type { Link } from './link.js';
import type { Message, Snapshot } from './wire.js';

export interface Lineage {
  session_id: string;
  archived_at: string | null;
  forked_from: { session_id: string; message_id: number; title: string | null; exists: boolean } | null;
  steps: { kind: 'compression' | 'reset'; at: string; method?: string }[];
  forks: { session_id: string; title: string | null; created_at: string }[];
}

export interface ManageHost {
  link: Link;
  sessionId: string;
  title(): string | null;
  /** The title was changed here: the header follows. */
  renamed(title: string): void;
  notice(text: string): void;
  fail(error: unknown): void;
  /** Opens another page (a fork, or the list after a delete). */
  go(hash: string): void;
}

const sessionHref = (id: string) => `#/s/${encodeURIComponent(id)}`;

/** The same message in a fresh snapshot, for one that arrived live (message.stored has no id). */
function sameMessage(a: Message, b: Message): boolean {
  return (
    a.role === b.role &&
    a.content === b.content &&
    (a.tool_call_id ?? null) === (b.tool_call_id ?? null) &&
    (a.admission_id ?? null) === (b.admission_id ?? null)
  );
}

/** session.fork at this message; opens the new session. */
export async function forkAt(host: ManageHost, message: Message): Promise<void> {
  let id = message.id;
  if (id === undefined) {
    const snap = await host.link.call<Snapshot>('session.resume', {
      session_id: host.sessionId,
      message_limit: 1000,
    });
    id = snap.messages.findLast((m) => sameMessage(m, message))?.id;
  }
  if (id === undefined) throw new Error('that message is not stored yet; fork it once its turn settles');
  const fork = await host.link.call<{ session_id: string }>('session.fork', {
    session_id: host.sessionId,
    message_id: id,
  });
  host.go(sessionHref(fork.session_id));
}

/** Copies text; where the clipboard is not offered, the text is selected for Ctrl-C instead. */
function copyButton(label: string, text: () => string, target: () => HTMLElement): HTMLElement {
  return h('button', {
    type: 'button',
    class: 'link copy',
    text: label,
    on: {
      click: () => {
        void navigator.clipboard?.writeText(text()).catch(() => undefined);
        const range = document.createRange();
        range.selectNodeContents(target());
        const selection = getSelection();
        selection?.removeAllRanges();
        selection?.addRange(range);
      },
    },
  });
}

type Mode = 'idle' | 'renaming' | 'deleting';

export class ManagePanel {
  readonly root = h('div', { class: 'manage', attrs: { role: 'group', 'aria-label': 'Manage session' } });
  private lineage: Lineage | null = null;
  private mode: Mode = 'idle';

  constructor(private readonly host: ManageHost) {}

  async load(): Promise<void> {
    this.lineage = await this.host.link.call<Lineage>('session.lineage', { session_id: this.host.sessionId });
    this.draw();
  }

  draw(): void {
    const id = this.host.sessionId;
    const resume = `gatehouse chat --resume ${id}`;
    const idCode = h('code', { class: 'session-id', text: id });
    const resumeCode = h('code', { class: 'resume-line', text: resume });
    clear(this.root);
    append(
      this.root,
      h(
        'p',
        { class: 'ids' },
        idCode,
        ' ',
        copyButton(
          'Copy id',
          () => id,
          () => idCode,
        ),
        ' · ',
        resumeCode,
        ' ',
        copyButton(
          'Copy',
          () => resume,
          () => resumeCode,
        ),
      ),
      this.controls(),
      this.lineageLine(),
    );
  }

  private controls(): HTMLElement {
    const row = h('div', { class: 'actions manage-actions' });
    const cancel = () =>
      h('button', {
        type: 'button',
        class: 'link',
        text: 'Keep it',
        on: { click: () => ((this.mode = 'idle'), this.draw()) },
      });
    if (this.mode === 'renaming') {
      const input = h('input', {
        type: 'text',
        value: this.host.title() ?? '',
        attrs: { 'aria-label': 'New title', maxlength: '80' },
      });
      const save = (e: Event) => {
        e.preventDefault();
        void this.run(async () => {
          const r = await this.host.link.call<{ title: string }>('session.title', {
            session_id: this.host.sessionId,
            title: input.value,
          });
          this.host.renamed(r.title);
          this.host.notice(`Renamed: ${r.title}`);
        });
      };
      append(
        row,
        h(
          'form',
          { class: 'confirm', on: { submit: save } },
          input,
          h('button', { type: 'submit', class: 'secondary', text: 'Save' }),
          cancel(),
        ),
      );
      queueMicrotask(() => input.focus());
      return row;
    }
    if (this.mode === 'deleting') {
      append(
        row,
        h(
          'div',
          { class: 'confirm', attrs: { role: 'alertdialog', 'aria-label': 'Confirm Delete' } },
          h('span', {
            text: 'Delete: the session, its transcripts, search entries and costs are removed for good.',
          }),
          h('button', {
            type: 'button',
            class: 'danger',
            text: 'Yes, delete',
            on: {
              click: () =>
                void this.host.link
                  .call('session.delete', { session_id: this.host.sessionId })
                  .then(() => this.host.go('#/'))
                  .catch((error: unknown) => ((this.mode = 'idle'), this.draw(), this.host.fail(error))),
            },
          }),
          cancel(),
        ),
      );
      return row;
    }
    const archived = this.lineage?.archived_at != null;
    const button = (text: string, click: () => void, cls = 'secondary') =>
      h('button', { type: 'button', class: cls, text, on: { click } });
    append(
      row,
      button('Rename', () => ((this.mode = 'renaming'), this.draw())),
      button(
        archived ? 'Unarchive' : 'Archive',
        () =>
          void this.run(async () => {
            await this.host.link.call('session.archive', {
              session_id: this.host.sessionId,
              archived: !archived,
            });
            this.host.notice(
              archived
                ? 'Unarchived: the session is listed again.'
                : 'Archived: hidden from the list ("Archived" shows it), still searchable.',
            );
          }),
      ),
      button('Delete', () => ((this.mode = 'deleting'), this.draw()), 'secondary danger-text'),
    );
    return row;
  }

  private lineageLine(): HTMLElement | null {
    const l = this.lineage;
    if (!l) return null;
    const parts: (Node | string)[] = [];
    if (l.forked_from) {
      const from = l.forked_from;
      parts.push(
        'Forked from ',
        from.exists
          ? h('a', { href: sessionHref(from.session_id), text: from.title ?? from.session_id })
          : `${from.session_id} (deleted)`,
        ` at message ${from.message_id}`,
      );
    }
    for (const step of l.steps) {
      if (parts.length > 0) parts.push(' · ');
      parts.push(`${step.kind === 'reset' ? 'reset' : 'compressed'} ${when(step.at)}`);
    }
    if (l.forks.length > 0) {
      if (parts.length > 0) parts.push(' · ');
      parts.push('Forks: ');
      l.forks.forEach((f, i) => {
        if (i > 0) parts.push(', ');
        parts.push(h('a', { href: sessionHref(f.session_id), text: f.title ?? f.session_id }));
      });
    }
    if (parts.length === 0) return null;
    return h('p', { class: 'lineage meta' }, h('span', { class: 'label', text: 'Lineage: ' }), ...parts);
  }

  private async run(work: () => Promise<void>): Promise<void> {
    this.mode = 'idle';
    try {
      await work();
      await this.load();
    } catch (error) {
      this.draw();
      this.host.fail(error);
    }
  }
}
