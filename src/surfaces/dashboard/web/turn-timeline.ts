/**
 * A turn's flight recorder (session.turns): opened from the turn's message, it lists what the turn
 * did from the stored records — admission, queue wait, each model step (duration), each tool call
 * (command, outcome at a glance, the approval it ran under, duration, output), compressions, crash
 * markers (interrupted, resumed, unknown) and the outcome — with the turn's tokens and cost.
 */
import { append, count, h, when } from './dom.js';
import type { Link } from './link.js';

type Event = { kind: string; at?: string | null; [field: string]: unknown };

const text = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

export interface Turn {
  admission_id: string;
  state: string;
  queue_wait_ms: number | null;
  duration_ms: number | null;
  resumes: number;
  tokens: { input: number; output: number; cache_read: number } | null;
  cost: { usd: number; status: string } | null;
  events: Event[];
}

const seconds = (value: unknown): string =>
  typeof value === 'number' ? `${(value / 1000).toFixed(value < 10_000 ? 2 : 1)} s` : '—';

function describe(e: Event): (Node | string)[] {
  switch (e.kind) {
    case 'admitted':
      return ['admitted'];
    case 'started':
      return [`started after ${seconds(e['queue_wait_ms'])} in the queue`];
    case 'model': {
      const calls = e['tool_calls'] as string[];
      return [
        `model answered in ${seconds(e['duration_ms'])}`,
        calls.length > 0 ? ` · calls ${calls.join(', ')}` : '',
      ];
    }
    case 'tool': {
      const outcome = String(e['outcome']);
      return [
        h('span', { class: `outcome outcome-${outcome}`, text: outcome }),
        ' ',
        h('code', { text: String(e['command']) }),
        e['approval'] ? ` · approval: ${text(e['approval'])}` : '',
        e['duration_ms'] != null ? ` · ${seconds(e['duration_ms'])}` : '',
        e['output'] ? h('pre', { class: 'tool-output', text: text(e['output']) }) : '',
      ];
    }
    case 'compression':
      return [`context compressed (${String(e['method'])})`];
    case 'interrupted':
      return [h('span', { class: 'outcome outcome-interrupted', text: 'interrupted' }), ' here'];
    case 'resumed':
      return [
        h('span', { class: 'outcome outcome-resumed', text: 'resumed' }),
        ` here, at step ${String(e['step'])}, after a gateway restart (${String(e['resumes'])}×)`,
      ];
    case 'unknown':
      return [
        h('span', { class: 'outcome outcome-unknown', text: 'unknown' }),
        ` here, in step ${String(e['step'])}: the gateway died while it ran; its effect is unknown — Resolve it in the session`,
      ];
    case 'settled':
      return [
        h('span', { class: `outcome outcome-${String(e['outcome'])}`, text: String(e['outcome']) }),
        e['detail'] ? ` · ${text(e['detail'])}` : '',
      ];
    default:
      return [e.kind];
  }
}

export function timelineElement(turn: Turn): HTMLElement {
  const t = turn.tokens;
  const summary = [
    `${turn.state} · ${seconds(turn.duration_ms)}`,
    t ? ` · ${count(t.input)} in, ${count(t.output)} out` : '',
    turn.cost ? ` · $${turn.cost.usd.toFixed(4)} (${turn.cost.status})` : '',
  ].join('');
  const list = h('ol', { class: 'events' });
  for (const e of turn.events) {
    append(
      list,
      h(
        'li',
        {
          class: `event event-${e.kind}`,
          attrs: {
            'data-kind': e.kind,
            ...(typeof e['outcome'] === 'string' ? { 'data-outcome': e['outcome'] } : {}),
          },
        },
        h('time', { class: 'stamp', text: e.at ? when(e.at) : '' }),
        ...describe(e),
      ),
    );
  }
  return h(
    'section',
    { class: 'timeline', attrs: { 'aria-label': 'Turn timeline', 'data-admission': turn.admission_id } },
    h('p', { class: 'meta', text: summary }),
    list,
  );
}

/** Reads the session's newest turns and returns this one's timeline (null: not among them). */
export async function loadTimeline(
  link: Link,
  sessionId: string,
  admissionId: string,
): Promise<HTMLElement | null> {
  const { turns } = await link.call<{ turns: Turn[] }>('session.turns', {
    session_id: sessionId,
    limit: 100,
  });
  const turn = turns.find((x) => x.admission_id === admissionId);
  return turn ? timelineElement(turn) : null;
}
