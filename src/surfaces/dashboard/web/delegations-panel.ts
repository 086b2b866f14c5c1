/**
 * The open session's background delegations (issue 28, docs/scheduling.md "Background
 * delegations"): each with its task, state and outcome and a link to its child session, and Stop and
 * Keep buttons while it goes. The same RPC methods as `gatehouse delegations`: delegation.list,
 * delegation.stop, delegation.keep. Hidden while the session has none.
 */
import { clear, h } from './dom.js';
import type { Link } from './link.js';

interface DelegationRow {
  delegation_id: string;
  child_session_id: string | null;
  task: string;
  state: 'starting' | 'running' | 'reported' | 'stopped';
  outcome: string | null;
  detail: string | null;
  kept: boolean;
}

export interface DelegationsHost {
  link: Link;
  sessionId: string;
  notice(text: string): void;
  fail(error: unknown): void;
}

export class DelegationsPanel {
  private readonly list = h('ul', { class: 'delegations-list' });
  readonly root = h(
    'section',
    { class: 'delegations', hidden: true, attrs: { 'aria-label': 'Background delegations' } },
    h('h2', { text: 'Background delegations' }),
    this.list,
  );

  constructor(private readonly host: DelegationsHost) {}

  /** Reads the session's delegations again and redraws the list. */
  load(): Promise<void> {
    return this.host.link
      .call<{ delegations: DelegationRow[] }>('delegation.list', { session_id: this.host.sessionId })
      .then(({ delegations }) => {
        clear(this.list);
        for (const d of delegations) this.list.appendChild(this.row(d));
        this.root.hidden = delegations.length === 0;
      })
      .catch((error: unknown) => this.host.fail(error));
  }

  private action(label: string, method: string, params: Record<string, unknown>, done: string): HTMLElement {
    const button = h('button', { type: 'button', text: label });
    button.addEventListener('click', () => {
      button.disabled = true;
      this.host.link.call(method, params).then(
        () => {
          this.host.notice(done);
          void this.load();
        },
        (error: unknown) => {
          button.disabled = false;
          this.host.fail(error);
        },
      );
    });
    return button;
  }

  private row(d: DelegationRow): HTMLElement {
    const open = d.state === 'starting' || d.state === 'running';
    const state = open
      ? d.state + (d.kept ? ' (kept)' : '')
      : `${d.state}: ${d.outcome ?? '—'}${d.detail ? ` (${d.detail})` : ''}`;
    const id = { delegation_id: d.delegation_id };
    return h(
      'li',
      { class: 'delegation-row', attrs: { 'data-delegation': d.delegation_id } },
      h('p', { class: 'delegation-task', text: d.task }),
      h('p', { class: 'delegation-state', text: state }),
      d.child_session_id
        ? h('a', {
            class: 'delegation-child',
            text: `child session ${d.child_session_id}`,
            attrs: { href: `#/s/${encodeURIComponent(d.child_session_id)}` },
          })
        : h('span', { class: 'muted', text: 'no child session yet' }),
      ...(open
        ? [
            this.action('Stop', 'delegation.stop', id, `Stopped ${d.delegation_id}.`),
            ...(d.kept
              ? []
              : [
                  this.action(
                    'Keep',
                    'delegation.keep',
                    { ...id, kept: true },
                    `Kept ${d.delegation_id}: a reset of this session no longer stops it.`,
                  ),
                ]),
          ]
        : []),
    );
  }
}
