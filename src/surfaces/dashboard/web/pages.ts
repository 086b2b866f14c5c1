/** The list, new-session and status pages: each draws from public RPC methods only. */
import { costText } from '../../client/usage-text.js';
import { append, clear, count, h, when } from './dom.js';
import { RpcError, type Link } from './link.js';
import type { ListedSession } from './wire.js';

const PAGE = 25;

function errorText(error: unknown): string {
  if (error instanceof RpcError) return `${error.message} (${error.reason})`;
  return error instanceof Error ? error.message : String(error);
}

function sessionRow(s: ListedSession): HTMLElement {
  const origin = s.kind === 'platform' ? (s.platform ?? 'platform') : s.source;
  return h(
    'li',
    { class: 'session-row', attrs: { 'data-session': s.session_id } },
    h(
      'a',
      {
        href:
          s.kind === 'local'
            ? `#/s/${encodeURIComponent(s.session_id)}`
            : `#/p/${encodeURIComponent(s.session_id)}`,
      },
      h('span', { class: 'title', text: s.title ?? s.session_id }),
      h('span', { class: `state state-${s.state}`, text: s.state }),
    ),
    h(
      'p',
      { class: 'meta' },
      `${origin} · ${s.model ?? '—'} · ${when(s.last_activity)} · ${count(s.tokens.total)} tokens (${count(s.tokens.input)} in, ${count(s.tokens.output)} out) · ${costText(s.cost && { usd: s.cost.estimated_usd, status: s.cost.status })}`,
    ),
  );
}

interface SearchHit {
  session_id: string;
  title: string | null;
  message_id: number;
  role: string;
  snippet: string;
  timestamp: string;
}

/** A search hit, named by its session's title, linking to the session opened at the message. */
function hitRow(hit: SearchHit): HTMLElement {
  const name = hit.title ?? hit.session_id;
  return h(
    'li',
    {
      class: 'session-row hit',
      attrs: { 'data-session': hit.session_id, 'data-message': String(hit.message_id) },
    },
    h('a', {
      href: `#/s/${encodeURIComponent(hit.session_id)}/m/${hit.message_id}`,
      text: name,
      title: hit.session_id,
    }),
    h('p', { class: 'meta', text: `${hit.role} · ${when(hit.timestamp)}: ${hit.snippet}` }),
  );
}

export function sessionsPage(link: Link): HTMLElement {
  const list = h('ul', { class: 'sessions' });
  const more = h('button', { type: 'button', class: 'link', text: 'More', hidden: true });
  const status = h('p', { class: 'muted' });
  const search = h('input', {
    type: 'search',
    attrs: { placeholder: 'Search messages', 'aria-label': 'Search' },
  });
  let cursor: string | null = null;
  /** Archived sessions are listed only on their own view (session.list's `archived`). */
  let archived = false;
  const heading = h('h1', { text: 'Sessions' });
  const toggle = h('button', { type: 'button', class: 'link archived-toggle', text: 'Archived' });

  /**
   * The newest listing or search asked for: an answer to an older one is dropped, so a search sent
   * while the page's first listing is still on its way is not overwritten by that listing.
   */
  let asked = 0;

  const load = async (reset: boolean) => {
    const mine = ++asked;
    if (reset) {
      clear(list);
      cursor = null;
    }
    try {
      const page = await link.call<{ sessions: ListedSession[]; next_cursor: string | null }>(
        'session.list',
        {
          scope: 'all',
          limit: PAGE,
          ...(archived ? { archived } : {}),
          ...(cursor ? { cursor } : {}),
        },
      );
      if (mine !== asked) return;
      for (const s of page.sessions) list.appendChild(sessionRow(s));
      cursor = page.next_cursor;
      more.hidden = cursor === null;
      const none = archived ? 'No archived sessions.' : 'No sessions yet: start one with "New session".';
      status.textContent = list.childElementCount === 0 ? none : '';
    } catch (error) {
      if (mine === asked) status.textContent = errorText(error);
    }
  };

  const find = async (query: string) => {
    const mine = ++asked;
    clear(list);
    more.hidden = true;
    try {
      const { hits } = await link.call<{ hits: SearchHit[] }>('session.search', { query, limit: 50 });
      if (mine !== asked) return;
      for (const hit of hits) list.appendChild(hitRow(hit));
      status.textContent = hits.length === 0 ? `Nothing matches "${query}".` : '';
    } catch (error) {
      if (mine === asked) status.textContent = errorText(error);
    }
  };

  more.addEventListener('click', () => void load(false));
  toggle.addEventListener('click', () => {
    archived = !archived;
    heading.textContent = archived ? 'Archived sessions' : 'Sessions';
    toggle.textContent = archived ? 'All sessions' : 'Archived';
    void load(true);
  });
  const form = h(
    'form',
    {
      class: 'search',
      on: {
        submit: (e) => {
          e.preventDefault();
          const query = search.value.trim();
          void (query === '' ? load(true) : find(query));
        },
      },
    },
    search,
    h('button', { type: 'submit', text: 'Search' }),
  );
  void load(true);
  return h('section', { class: 'page' }, heading, form, toggle, status, list, more);
}

interface Describe {
  session_create: {
    sources: string[];
    defaults?: { model: string; toolsets: string[] };
    toolsets?: string[];
    providers?: { name: string; default: boolean; models: string[]; demo: boolean }[];
  };
  storage?: Record<string, number | boolean>;
  agent_cache?: Record<string, number | Record<string, number>>;
  gateway?: {
    version: string;
    started_at: string;
    uptime_s: number;
    model: { name: string; provider: string; demo: boolean };
    platforms: { platform: string; state: string; detail: string | null; account: string | null }[];
  };
  [field: string]: unknown;
}

export function newSessionPage(link: Link, opened: (sessionId: string) => void): HTMLElement {
  const form = h('form', { class: 'page new-session' });
  const error = h('p', { class: 'error', attrs: { role: 'alert' } });
  void link.call<Describe>('runtime.describe').then(
    (describe) => {
      const contract = describe.session_create;
      if (!contract.sources.includes('gui')) {
        error.textContent = 'This gateway does not allow sessions with the gui source.';
        return;
      }
      const title = h('input', {
        type: 'text',
        name: 'title',
        attrs: { 'aria-label': 'Title', placeholder: 'optional' },
      });
      const cwd = h('input', {
        type: 'text',
        name: 'cwd',
        attrs: { 'aria-label': 'Working directory', placeholder: 'the gateway default' },
      });
      // Provider and model are chosen from the contract's list, never typed: the page offers only
      // what the gateway allows. Changing the provider offers its models, its first one chosen.
      const providers = contract.providers ?? [];
      const provider = h(
        'select',
        { name: 'provider', attrs: { 'aria-label': 'Provider' } },
        ...providers.map((p) =>
          h('option', {
            value: p.name,
            text: `${p.name}${p.demo ? ' (demo model)' : ''}`,
            selected: p.default,
          }),
        ),
      );
      const model = h('select', { name: 'model', attrs: { 'aria-label': 'Model' } });
      const offerModels = (initial: boolean) => {
        clear(model);
        const chosen = providers.find((p) => p.name === provider.value);
        for (const name of chosen?.models ?? [])
          model.appendChild(
            h('option', {
              value: name,
              text: name,
              selected: initial && name === contract.defaults?.model,
            }),
          );
      };
      offerModels(true);
      provider.addEventListener('change', () => offerModels(false));
      const chosen = new Set(contract.defaults?.toolsets ?? []);
      const toolsets = (contract.toolsets ?? [...chosen]).map((name) =>
        h(
          'label',
          { class: 'check' },
          h('input', { type: 'checkbox', value: name, checked: chosen.has(name) }),
          ` ${name}`,
        ),
      );
      const requestId = crypto.randomUUID();
      append(
        form,
        h('h1', { text: 'New session' }),
        h('label', {}, 'Title', title),
        h('label', {}, 'Working directory', cwd),
        providers.length > 0 ? h('label', {}, 'Provider', provider) : null,
        providers.length > 0 ? h('label', {}, 'Model', model) : null,
        h('fieldset', {}, h('legend', { text: 'Toolsets' }), ...toolsets),
        error,
        h('button', { type: 'submit', text: 'Create' }),
      );
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        const params: Record<string, unknown> = { source: 'gui', request_id: requestId };
        if (title.value.trim()) params['title'] = title.value.trim();
        if (cwd.value.trim()) params['cwd'] = cwd.value.trim();
        if (provider.value) params['provider'] = provider.value;
        if (model.value) params['model'] = model.value;
        params['toolsets'] = toolsets
          .map((label) => label.querySelector('input')!)
          .filter((box) => box.checked)
          .map((box) => box.value);
        link.call<{ session_id: string }>('session.create', params).then(
          (snapshot) => opened(snapshot.session_id),
          (err: unknown) => (error.textContent = errorText(err)),
        );
      });
    },
    (err: unknown) => append(form, error, errorText(err)),
  );
  return form;
}

function table(rows: [string, string][]): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    ...rows.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]),
  );
}

/** Counter rows; a nested block (the agent cache's evictions by cause) as `name.key` rows. */
function counterRows(values: Record<string, unknown>, prefix = ''): [string, string][] {
  return Object.entries(values).flatMap(([k, v]): [string, string][] =>
    v !== null && typeof v === 'object'
      ? counterRows(v as Record<string, unknown>, `${prefix}${k}.`)
      : [[`${prefix}${k}`, typeof v === 'number' ? count(v) : String(v)]],
  );
}

export function statusPage(link: Link): HTMLElement {
  const page = h('section', { class: 'page status' }, h('h1', { text: 'Status' }));
  void link.call<Describe>('runtime.describe').then(
    (d) => {
      const g = d.gateway;
      if (g) {
        append(
          page,
          h('h2', { text: 'Gateway' }),
          table([
            ['version', g.version],
            ['uptime', `${g.uptime_s}s (since ${when(g.started_at)})`],
            [
              'model',
              g.model.demo
                ? `${g.model.name} (demo model: a scripted stand-in, not a real model)`
                : g.model.name,
            ],
            ['provider', g.model.provider],
          ]),
          h('h2', { text: 'Chat platforms' }),
          g.platforms.length === 0
            ? h('p', { class: 'muted', text: 'No chat platform is enabled.' })
            : table(
                g.platforms.map((p) => [
                  p.platform,
                  `${p.state}${p.account ? ` as ${p.account}` : ''}${p.detail ? `: ${p.detail}` : ''}`,
                ]),
              ),
        );
      }
      const providers = d.session_create.providers ?? [];
      if (providers.length > 0) {
        append(
          page,
          h('h2', { text: 'Providers' }),
          table(
            providers.map((p) => [
              p.name,
              `${p.models.join(', ') || '—'}${p.default ? ' (default)' : ''}${p.demo ? ' (demo model)' : ''}`,
            ]),
          ),
        );
      }
      if (d.storage) append(page, h('h2', { text: 'Storage' }), table(counterRows(d.storage)));
      if (d.agent_cache) append(page, h('h2', { text: 'Agent cache' }), table(counterRows(d.agent_cache)));
    },
    (err: unknown) => append(page, h('p', { class: 'error', text: errorText(err) })),
  );
  // What today's turns cost, per principal, provider and model (docs/cost.md).
  const today = new Date().toISOString().slice(0, 10);
  void link.call<CostSummary>('cost.summary', { from_day: today, to_day: today }).then(
    (summary) =>
      append(
        page,
        h('h2', { text: 'Cost today (UTC)' }),
        summary.rows.length === 0
          ? h('p', { class: 'muted', text: 'No turn called a model today.' })
          : table(
              summary.rows.map((r) => [
                `${r.principal} · ${r.provider}/${r.model}`,
                `${costText({ usd: r.cost_usd, status: r.cost_status })} · ${count(r.turns)} turns`,
              ]),
            ),
      ),
    (err: unknown) => append(page, h('p', { class: 'error', text: errorText(err) })),
  );
  return page;
}

interface CostSummary {
  rows: {
    principal: string;
    provider: string;
    model: string;
    turns: number;
    cost_usd: number;
    cost_status: ListedSession['cost']['status'];
  }[];
}
