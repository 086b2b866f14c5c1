/**
 * The Approvals page (issue 25): every remembered approval (`session` and `always` answers), each
 * the exact command it approves in its directory, with a button that revokes it. It calls the same
 * RPC methods as `gatehouse approvals list|revoke`: `approvals.list` and `approvals.revoke`.
 */
import { clear, h, when } from './dom.js';
import { RpcError, type Link } from './link.js';
import type { ApprovalsListResult, RememberedApprovalRow } from '../../../protocol/results.js';

export function errorText(error: unknown): string {
  if (error instanceof RpcError) return `${error.message} (${error.reason})`;
  return error instanceof Error ? error.message : String(error);
}

export function approvalsPage(link: Link): HTMLElement {
  const list = h('ul', { class: 'approvals' });
  const status = h('p', { class: 'muted', attrs: { role: 'status' } });

  const row = (a: RememberedApprovalRow): HTMLElement => {
    const revoke = h('button', { type: 'button', text: 'Revoke' });
    const item = h(
      'li',
      { class: 'approval-row', attrs: { 'data-approval': a.id } },
      h('code', { class: 'command', text: a.shown }),
      h('p', {
        class: 'meta',
        text: `${a.scope === 'always' ? 'always' : `this session only (${a.session_id ?? ''})`} · in ${a.cwd} · ${a.surface} · ${when(a.created_at)} · ${a.id}`,
      }),
      revoke,
    );
    revoke.addEventListener('click', () => {
      revoke.disabled = true;
      link.call('approvals.revoke', { id: a.id }).then(
        () => {
          item.remove();
          status.textContent = `Revoked ${a.id}: that command asks again.`;
        },
        (error: unknown) => {
          revoke.disabled = false;
          status.textContent = errorText(error);
        },
      );
    });
    return item;
  };

  void link.call<ApprovalsListResult>('approvals.list').then(
    ({ approvals }) => {
      clear(list);
      for (const a of approvals) list.appendChild(row(a));
      status.textContent = approvals.length === 0 ? 'No remembered approvals.' : '';
    },
    (error: unknown) => {
      status.textContent = errorText(error);
    },
  );
  return h(
    'section',
    { class: 'page approvals-page' },
    h('h1', { text: 'Approvals' }),
    h('p', {
      class: 'muted',
      text: 'Each approval runs that exact command, in that directory, without asking. Revoke one and it asks again.',
    }),
    status,
    list,
  );
}
