/**
 * The session's controls beside the header: Compress, Retry, Undo and Reset (session.compress,
 * session.retry, session.undo, session.reset). The ones that take messages out of the history ask
 * first, inline (no window.confirm: the page stays one document the keyboard can drive). While a
 * turn runs only Compress is offered: the others would be refused with session_busy. Model opens a
 * chooser of the configured providers' models (runtime.describe) and moves the session there
 * (session.model).
 */
import { append, clear, h } from './dom.js';
import type { SessionState } from './session-state.js';

export interface ActionHost {
  state: SessionState;
  /** Shows what an action did (or why it did nothing). */
  notice(text: string): void;
  fail(error: unknown): void;
  /** Puts text back into the composer (an undone message, for editing). */
  refill(text: string): void;
}

interface Action {
  label: string;
  /** The question asked before a destructive action; null runs it at once. */
  confirm: string | null;
  whileRunning: boolean;
  run(host: ActionHost): Promise<void>;
}

const ACTIONS: Action[] = [
  {
    label: 'Compress',
    confirm: null,
    whileRunning: true,
    run: async (host) => host.notice(await host.state.compress()),
  },
  {
    label: 'Retry',
    confirm: 'Retry: the last answer is taken back and the last message is sent again.',
    whileRunning: false,
    run: async (host) => host.notice(await host.state.retry()),
  },
  {
    label: 'Undo',
    confirm: 'Undo: the last message and its answer are taken out of the history.',
    whileRunning: false,
    run: async (host) => {
      const { notice, text } = await host.state.undo();
      host.notice(notice);
      if (text) host.refill(text);
    },
  },
  {
    label: 'Reset',
    confirm: 'Reset: the session continues on an empty history (the old one stays searchable).',
    whileRunning: false,
    run: async (host) => host.notice(await host.state.reset()),
  },
];

const MODEL = 'Model';

/** The actions row; redrawn with the header. `asking` is the action whose confirmation is open. */
export function actionsRow(host: ActionHost, asking: { label: string | null }, redraw: () => void) {
  const row = h('div', { class: 'actions', attrs: { role: 'group', 'aria-label': 'Session actions' } });
  const run = (action: Action) => {
    asking.label = null;
    host.notice('');
    redraw();
    void action.run(host).catch((error: unknown) => host.fail(error));
  };
  const keep = () =>
    h('button', {
      type: 'button',
      class: 'link',
      text: 'Keep it',
      on: { click: () => ((asking.label = null), redraw()) },
    });
  const choices = host.state.modelChoices;
  if (asking.label === MODEL && choices) {
    const info = host.state.info;
    const current = `${info?.provider ?? ''}/${info?.model ?? ''}`;
    const select = h(
      'select',
      { attrs: { 'aria-label': 'Model' } },
      ...choices.map((c) => h('option', { value: c, text: c, selected: c === current })),
    );
    const move = () => {
      asking.label = null;
      host.notice('');
      redraw();
      void host.state
        .changeModel(select.value)
        .then((text) => host.notice(text))
        .catch((error: unknown) => host.fail(error));
    };
    clear(row);
    append(
      row,
      h(
        'div',
        { class: 'confirm', attrs: { role: 'group', 'aria-label': 'Choose a model' } },
        select,
        h('button', { type: 'button', class: 'secondary', text: 'Move', on: { click: move } }),
        keep(),
      ),
    );
    return row;
  }
  const open = ACTIONS.find((a) => a.label === asking.label);
  if (open?.confirm) {
    clear(row);
    append(
      row,
      h(
        'div',
        { class: 'confirm', attrs: { role: 'alertdialog', 'aria-label': `Confirm ${open.label}` } },
        h('span', { text: open.confirm }),
        h('button', {
          type: 'button',
          class: 'danger',
          text: `Yes, ${open.label.toLowerCase()}`,
          on: { click: () => run(open) },
        }),
        keep(),
      ),
    );
    return row;
  }
  const running = host.state.running !== null;
  for (const action of ACTIONS) {
    append(
      row,
      h('button', {
        type: 'button',
        class: 'secondary',
        text: action.label,
        disabled: running && !action.whileRunning,
        on: {
          click: () => {
            if (action.confirm === null) return run(action);
            asking.label = action.label;
            redraw();
          },
        },
      }),
    );
  }
  append(
    row,
    h('button', {
      type: 'button',
      class: 'secondary',
      text: MODEL,
      disabled: running,
      on: {
        click: () =>
          void host.state
            .loadModelChoices()
            .then(() => ((asking.label = MODEL), redraw()))
            .catch((error: unknown) => host.fail(error)),
      },
    }),
  );
  return row;
}
