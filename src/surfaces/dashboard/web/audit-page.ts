/**
 * The Audit page (issue 30): the append-only audit trail, newest first — who created, submitted,
 * approved, denied, answered, interrupted, reset, shared and signed in, by which path, on which
 * session, with what outcome. Operators only: it calls `audit.list`, as `gatehouse audit` does, and
 * a member is told the trail is for operators.
 */
import type { AuditRow } from '../../../protocol/results.js';
import { clear, h } from './dom.js';
import { RpcError, type Link } from './link.js';

const PAGE = 100;

export function auditPage(link: Link): HTMLElement {
  const body = h('tbody');
  const status = h('p', { class: 'muted', attrs: { role: 'status' } });
  const older = h('button', { type: 'button', text: 'Older', attrs: { hidden: '' } });
  let before: number | null = null;

  const row = (r: AuditRow): HTMLElement =>
    h(
      'tr',
      {
        class: `audit-row outcome-${r.outcome === 'ok' ? 'ok' : 'refused'}`,
        attrs: { 'data-audit': String(r.id) },
      },
      h('td', { text: new Date(r.at).toISOString().replace('T', ' ').slice(0, 19) }),
      h('td', { class: 'principal', text: r.principal }),
      h('td', { text: r.path }),
      h('td', { class: 'action', text: r.action }),
      h(
        'td',
        {},
        r.session_id === null
          ? '—'
          : h('a', { href: `#/s/${encodeURIComponent(r.session_id)}`, text: r.session_id }),
      ),
      h('td', { class: 'outcome', text: r.outcome }),
      h('td', { class: 'detail', text: r.detail === null ? '' : JSON.stringify(r.detail) }),
    );

  const load = (): void => {
    older.hidden = true;
    link
      .call<{ rows: AuditRow[]; next_before_id: number | null }>('audit.list', {
        limit: PAGE,
        ...(before !== null ? { before_id: before } : {}),
      })
      .then(
        ({ rows, next_before_id }) => {
          if (before === null) clear(body);
          for (const r of rows) body.appendChild(row(r));
          before = next_before_id;
          older.hidden = next_before_id === null;
          status.textContent = body.childElementCount === 0 ? 'Nothing audited yet.' : '';
        },
        (error: unknown) => {
          status.textContent =
            error instanceof RpcError && error.reason === 'permission_denied'
              ? 'The audit trail is for operators.'
              : error instanceof Error
                ? error.message
                : String(error);
        },
      );
  };
  older.addEventListener('click', load);
  load();
  return h(
    'section',
    { class: 'page audit-page' },
    h('h1', { text: 'Audit' }),
    h('p', {
      class: 'muted',
      text: 'Who did what, newest first. Rows are never changed or removed; message text is kept only when auth.audit.message_text is on.',
    }),
    status,
    h(
      'table',
      { class: 'audit' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['time (UTC)', 'principal', 'path', 'action', 'session', 'outcome', 'detail'].map((t) =>
            h('th', { text: t }),
          ),
        ),
      ),
      body,
    ),
    older,
  );
}
