/**
 * Context and cost at a glance (issue 31 item 3): a meter of the context window the session's next
 * request fills and where its next compression starts (session.context, counted as the turn's own
 * budget check counts), what the session has spent (session.cost), and each recent turn's tokens
 * and cost (session.turns). Read again after every settled turn and every compression.
 */
import { contextText, costText, tokensText, type ContextView } from '../../client/usage-text.js';
import { append, clear, count, h } from './dom.js';
import type { Link } from './link.js';

interface SessionCostView {
  estimated_cost_usd: number;
  cost_status: 'reported' | 'estimated' | 'unknown';
  tokens: { input: number; output: number; cache_read: number; total: number };
}

interface TurnUsage {
  admission_id: string;
  text: string;
  state: string;
  tokens: { input: number; output: number; cache_read: number } | null;
  cost: { usd: number; status: 'reported' | 'estimated' | 'unknown' } | null;
}

export class UsagePanel {
  readonly root = h('section', { class: 'usage', attrs: { 'aria-label': 'Context and cost' } });
  /** The newest load wins: a slower, older answer is not drawn over it. */
  private generation = 0;

  constructor(
    private readonly link: Link,
    private readonly sessionId: string,
  ) {}

  refresh(): void {
    const mine = ++this.generation;
    const session_id = this.sessionId;
    void Promise.all([
      this.link.call<ContextView>('session.context', { session_id }),
      this.link.call<SessionCostView>('session.cost', { session_id }),
      this.link.call<{ turns: TurnUsage[] }>('session.turns', { session_id, limit: 20 }),
    ])
      .then(([context, cost, { turns }]) => {
        if (mine === this.generation) this.draw(context, cost, turns);
      })
      .catch((error: unknown) => {
        // Said in the panel, not as the page's error: the session itself may still work.
        if (mine !== this.generation) return;
        clear(this.root);
        append(
          this.root,
          h('p', {
            class: 'meta',
            text: `Context and cost unavailable: ${error instanceof Error ? error.message : String(error)}`,
          }),
        );
      });
  }

  private draw(context: ContextView, cost: SessionCostView, turns: TurnUsage[]): void {
    clear(this.root);
    append(
      this.root,
      h(
        'div',
        { class: 'context-line' },
        h('label', { text: 'Context', attrs: { for: `context-${this.sessionId}` } }),
        h('meter', {
          class: 'context-meter',
          min: 0,
          max: context.window,
          // Past `high` the meter turns to its warning colour: the next turn compresses first.
          high: context.compress_at,
          optimum: 0,
          value: context.tokens,
          attrs: { id: `context-${this.sessionId}`, 'data-tokens': String(context.tokens) },
        }),
        h('span', {
          class: `context-text${context.compression_due ? ' due' : ''}`,
          text: contextText(context, count),
        }),
      ),
      h('p', {
        class: 'meta session-usage',
        text: `This session: ${tokensText(cost.tokens, count)} · ${costText({ usd: cost.estimated_cost_usd, status: cost.cost_status })}`,
      }),
    );
    const settled = turns.filter((turn) => turn.tokens !== null);
    if (settled.length === 0) return;
    const rows = settled.map((turn) =>
      h(
        'tr',
        { attrs: { 'data-admission': turn.admission_id } },
        h('td', { class: 'turn-text', text: turn.text.slice(0, 60) }),
        h('td', { text: turn.state }),
        h('td', { class: 'num', text: count(turn.tokens!.input) }),
        h('td', { class: 'num', text: count(turn.tokens!.output) }),
        h('td', {
          class: 'num',
          text: turn.cost ? costText(turn.cost) : '—',
        }),
      ),
    );
    append(
      this.root,
      h(
        'details',
        { class: 'turn-usage' },
        h('summary', { text: `Per turn (the newest ${settled.length})` }),
        h(
          'table',
          {},
          h(
            'thead',
            {},
            h('tr', {}, ...['Turn', 'Outcome', 'In', 'Out', 'Cost'].map((label) => h('th', { text: label }))),
          ),
          h('tbody', {}, ...rows),
        ),
      ),
    );
  }
}
