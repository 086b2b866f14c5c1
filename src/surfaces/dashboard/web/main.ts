/**
 * The dashboard's entry: one Link (WebSocket) for the whole page, a hash router over the pages,
 * and the login page whenever the link reports `signed_out`. Views are rebuilt on navigation;
 * an open session keeps its state across reconnects and resyncs itself on `open(reconnected)`.
 */
import './style.css';
import { login, logout, OIDC_START, signInMethods } from './auth.js';
import { clear, h } from './dom.js';
import { Link, type LinkState } from './link.js';
import { approvalsPage } from './approvals-page.js';
import { jobsPage } from './jobs-page.js';
import { auditPage } from './audit-page.js';
import { newSessionPage, sessionsPage, statusPage } from './pages.js';
import { platformSessionPage } from './platform-view.js';
import { SessionView } from './session-view.js';

const app = document.getElementById('app')!;
const nav = document.getElementById('nav')!;
const linkState = document.getElementById('link-state')!;
const who = document.getElementById('who')!;
const whoName = document.getElementById('who-name')!;
const link = new Link();
let session: SessionView | null = null;

/**
 * Who this page speaks for, read from `runtime.describe` on every (re)connection. A member sees
 * neither the operator pages' links nor the pages; the gateway refuses their methods anyway.
 */
let role: 'operator' | 'member' | null = null;
const OPERATOR_PAGES = new Set(['status', 'approvals', 'audit']);

interface Caller {
  principal: { subject: string; name?: string };
  capabilities: string[];
}

async function identify(): Promise<void> {
  const caller = await link.call<Caller>('runtime.describe');
  role = caller.capabilities.includes('session:operator') ? 'operator' : 'member';
  whoName.textContent = `signed in as ${caller.principal.name ?? caller.principal.subject} (${role})`;
  who.hidden = false;
  for (const a of nav.querySelectorAll<HTMLElement>('[data-operator]')) a.hidden = role !== 'operator';
}

function operatorOnly(): HTMLElement {
  return h(
    'section',
    { class: 'page', attrs: { 'data-reason': 'operator_only' } },
    h('h1', { text: 'Operators only' }),
    h('p', { text: 'This page is for operators. You are signed in as a member.' }),
  );
}

const STATE_LABELS: Record<LinkState, string> = {
  idle: '',
  connecting: 'connecting…',
  open: 'connected',
  waiting: 'reconnecting…',
  signed_out: '',
  stopped: '',
};

/** Said instead of "reconnecting…" once the gateway has not answered here for a while. */
const LOST_LABEL =
  'The gateway does not answer at this address. If it was restarted it may listen on another one: "gatehouse dashboard" prints its URL. Still trying…';

function show(page: HTMLElement): void {
  clear(app);
  app.appendChild(page);
}

function route(): void {
  if (link.state !== 'open') return;
  const hash = location.hash.replace(/^#\/?/, '');
  session?.close();
  session = null;
  const [kind, id, sub, at] = hash.split('/');
  if (kind && OPERATOR_PAGES.has(kind) && role !== 'operator') show(operatorOnly());
  else if (kind === 's' && id) {
    // #/s/ID/m/MESSAGE_ID: a search hit, the session opened at that message.
    const focus = sub === 'm' && at && /^\d+$/.test(at) ? Number(at) : null;
    session = new SessionView(decodeURIComponent(id), link, focus);
    show(session.root);
    void session.attach();
  } else if (kind === 'p' && id) show(platformSessionPage(link, decodeURIComponent(id)));
  else if (kind === 'new')
    show(newSessionPage(link, (sessionId) => (location.hash = `#/s/${encodeURIComponent(sessionId)}`)));
  else if (kind === 'status') show(statusPage(link));
  else if (kind === 'approvals') show(approvalsPage(link));
  else if (kind === 'jobs') show(jobsPage(link));
  else if (kind === 'audit') show(auditPage(link));
  else show(sessionsPage(link));
}

async function loginPage(): Promise<void> {
  nav.hidden = true;
  who.hidden = true;
  role = null;
  const methods = await signInMethods().catch(() => ({ password: true, oidc: false }));
  if (!methods.password && !methods.oidc) {
    show(
      h(
        'section',
        { class: 'page login' },
        h('h1', { text: 'Dashboard login is off' }),
        h(
          'p',
          {},
          'No dashboard password is set. On the gateway machine run ',
          h('code', { text: 'gatehouse passwd' }),
          ', then reload this page.',
        ),
      ),
    );
    return;
  }
  const password = h('input', {
    type: 'password',
    name: 'password',
    autocomplete: 'current-password',
    attrs: { 'aria-label': 'Password', required: '' },
  });
  const error = h('p', { class: 'error', attrs: { role: 'alert' } });
  const provider = methods.oidc
    ? h(
        'p',
        {},
        h('a', { class: 'button', attrs: { href: OIDC_START }, text: 'Sign in with your identity provider' }),
      )
    : null;
  const form = methods.password
    ? h(
        'form',
        { class: 'page login' },
        h('h1', { text: 'Log in' }),
        ...(provider ? [provider] : []),
        h('label', {}, 'Password', password),
        error,
        h('button', { type: 'submit', text: 'Log in' }),
      )
    : h('section', { class: 'page login' }, h('h1', { text: 'Log in' }), provider);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    error.textContent = '';
    void login(password.value).then((result) => {
      password.value = '';
      if (result === 'ok') return link.start();
      error.textContent =
        result === 'bad_password'
          ? 'Wrong password.'
          : result === 'rate_limited'
            ? 'Too many failed attempts: wait a minute and try again.'
            : result === 'dashboard_disabled'
              ? 'No dashboard password is set: run "gatehouse passwd" on the gateway machine.'
              : 'The gateway refused the login.';
    });
  });
  show(form);
  if (methods.password) password.focus();
}

link.listen({
  state(state) {
    const lost = link.lost && (state === 'waiting' || state === 'connecting');
    linkState.textContent = lost ? LOST_LABEL : STATE_LABELS[state];
    linkState.dataset['state'] = state;
    linkState.dataset['lost'] = lost ? 'true' : 'false';
    if (state === 'signed_out') {
      session?.close();
      session = null;
      void loginPage();
    }
  },
  open(reconnected) {
    // An open session catches up from its cursor; any other page is simply drawn again, once the
    // page knows whom it speaks for.
    if (reconnected && session) void session.attach();
    else
      void identify().then(
        () => {
          nav.hidden = false;
          route();
        },
        () => route(),
      );
  },
  notification(method, params) {
    if (method === 'session.event' && session && params['session_id'] === session.sessionId)
      session.arrive(params);
  },
});

window.addEventListener('hashchange', route);
document.getElementById('logout')!.addEventListener('click', () => {
  void logout().then(() => {
    link.stop();
    session = null;
    link.state = 'signed_out';
    void loginPage();
  });
});
link.start();
