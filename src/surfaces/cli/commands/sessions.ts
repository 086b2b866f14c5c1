/** `gatehouse sessions`: the stored sessions, or a full-text search over their messages (SPEC UX-1). */
import { DaemonError } from '../../../daemon/errors.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { openLink } from '../chat/link.js';
import {
  oneLineOf,
  renderHistory,
  type HistoryBoundaryView,
  type StoredMessageView,
} from '../chat/render.js';
import { colours } from '../colour.js';
import { cliHome, say } from '../shared.js';
import { visible } from '../visible.js';
import { loadCliConfig } from '../load-config.js';

export interface SessionsFlags {
  json?: boolean;
  search?: string;
  fts?: boolean;
  show?: string;
  modelView?: boolean;
  archived?: boolean;
  limit: string;
}

interface SessionRow {
  session_id: string;
  title: string | null;
  source: string;
  model: string | null;
  state: string;
  created_at: string;
  /** What it has cost so far (docs/cost.md); absent while its receipt is invalid. */
  cost?: { estimated_usd: number; status: 'reported' | 'estimated' | 'unknown' };
}

/** The COST column: `$0.0123`, `~$0.0123` (estimated), `>$0.0123` (some calls unpriced), or `?`. */
export function costColumn(cost: SessionRow['cost']): string {
  if (!cost) return '?';
  const amount = `$${cost.estimated_usd.toFixed(4)}`;
  if (cost.status === 'reported') return amount;
  if (cost.status === 'estimated') return `~${amount}`;
  return cost.estimated_usd > 0 ? `>${amount}` : '?';
}

interface SearchRow {
  session_id: string;
  role: string;
  snippet: string;
  timestamp: string;
}

/** `gatehouse sessions`: lists, searches or shows stored sessions through the gateway. */
export async function sessions(flags: SessionsFlags): Promise<void> {
  const limit = Number(flags.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 500) {
    throw new DaemonError(
      'invalid_input',
      `--limit must be a whole number from 1 to 500, got ${flags.limit}`,
    );
  }
  if (flags.search !== undefined && flags.search.trim() === '') {
    throw new DaemonError('invalid_input', '--search needs some text to look for');
  }
  if (flags.fts && flags.search === undefined) {
    throw new DaemonError('invalid_input', '--fts changes how --search is read; give --search <query> too');
  }
  const layout = cliHome();
  loadCliConfig(layout);
  if (flags.modelView && flags.show === undefined)
    throw new DaemonError('invalid_input', '--model-view goes with --show <id>');
  const { client } = await openLink(layout);
  try {
    if (flags.show !== undefined) {
      const shown = await client.call<{
        messages: StoredMessageView[];
        boundaries?: HistoryBoundaryView[];
        model_changes?: ModelChangeView[];
      }>('session.history', {
        session_id: flags.show,
        view: flags.modelView ? 'model' : 'full',
      });
      if (flags.json) return say(JSON.stringify(shown, null, 2));
      const [system, ...rest] = shown.messages;
      if (flags.modelView && system) say(`system> ${visible(system.content ?? '')}\n`);
      // Moves to another provider or model (session.model), before the history they apply to.
      if (!flags.modelView)
        for (const c of shown.model_changes ?? [])
          say(`model changed ${c.at}: ${placeOf(c.from)} → ${placeOf(c.to)}`);
      return void process.stdout.write(
        flags.modelView ? renderHistory(rest) : renderHistory(shown.messages, undefined, shown.boundaries),
      );
    }
    if (flags.search !== undefined) {
      const { hits } = await client.call<{ hits: SearchRow[] }>('session.search', {
        query: flags.search,
        limit,
        syntax: flags.fts ? 'fts' : 'plain',
      });
      if (flags.json) return say(JSON.stringify({ query: flags.search, hits }, null, 2));
      if (hits.length === 0) return say(`No message matches "${flags.search}".`);
      for (const h of hits) {
        say(`${h.session_id}  ${h.timestamp}  ${h.role}: ${oneLineOf(visible(h.snippet), 120)}`);
      }
      return;
    }
    const { sessions } = await client.call<{ sessions: SessionRow[] }>('session.list', {
      scope: 'stored',
      limit,
      archived: flags.archived === true,
    });
    if (flags.json) return say(JSON.stringify({ sessions }, null, 2));
    if (sessions.length === 0)
      return say(
        flags.archived ? 'No archived sessions.' : 'No sessions yet. Start one with "gatehouse chat".',
      );
    const c = colours();
    // A state at a glance: running green, anything that needs a person (unknown, paused) red.
    const stateColour = (state: string): ((text: string) => string) =>
      state === 'running' ? c.green : state === 'unknown' || state === 'paused' ? c.red : c.dim;
    say(
      c.bold(
        [
          'ID'.padEnd(24),
          'CREATED'.padEnd(20),
          'SOURCE',
          'STATE  ',
          'MODEL'.padEnd(16),
          'COST'.padEnd(10),
          'TITLE',
        ].join(' '),
      ),
    );
    for (const s of sessions) {
      say(
        [
          s.session_id.padEnd(24),
          s.created_at.slice(0, 19).replace('T', ' ').padEnd(20),
          s.source.padEnd(6),
          stateColour(s.state)(s.state.padEnd(7)),
          (s.model ?? '-').padEnd(16),
          costColumn(s.cost).padEnd(10),
          visible(s.title ?? '-'),
        ].join(' '),
      );
    }
  } catch (error) {
    if (error instanceof RpcCallError && error.reason === 'invalid_params') {
      throw new DaemonError('invalid_input', error.message);
    }
    if (error instanceof RpcCallError) throw new DaemonError('not_available', error.message);
    throw error;
  } finally {
    await client.close();
  }
}

interface ModelChangeView {
  from: { provider: string | null; model: string };
  to: { provider: string; model: string };
  at: string;
}

const placeOf = (p: { provider: string | null; model: string }): string =>
  `${p.provider ?? 'own endpoint'}/${p.model}`;
