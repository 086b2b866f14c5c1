/**
 * The chat's commands about the chat itself (issue 31 item 10): leave, clear the screen, what this
 * session is, the other sessions, a skill for the next message, and /reconnect (run by the
 * controller: it works while the link is down; listed here for /help).
 */
import { readSkill } from '../../../daemon/skills.js';
import type { CostStatus } from '../../../domain/vocabulary.js';
import { contextText, costText, type ContextView } from '../../client/usage-text.js';
import type { ChatCommand, CommandContext } from './commands.js';
import { oneLineOf } from './render.js';
import { visible } from '../visible.js';

/** Clears the screen and its scrollback, cursor home (a terminal only). */
export const CLEAR_SCREEN = '\u001b[2J\u001b[3J\u001b[H';

interface InfoView {
  title: string | null;
  model: string | null;
  provider: string | null;
  cwd: string | null;
  agent: string;
  created_at: string;
  forked_from: string | null;
}

async function status(ctx: CommandContext): Promise<void> {
  const info = await ctx.call<InfoView>('session.info', { session_id: ctx.sessionId });
  const cost = await ctx.call<{
    estimated_cost_usd: number;
    cost_status: CostStatus;
    tokens: { total: number };
  }>('session.cost', { session_id: ctx.sessionId });
  const context = await ctx.call<ContextView>('session.context', { session_id: ctx.sessionId });
  const state = ctx.view.running !== null ? 'running a turn' : ctx.view.inflight ? 'queued' : 'idle';
  ctx.view.writeLine(
    ctx.terminal.style.dim(
      [
        `session: ${ctx.sessionId}${info.title ? ` "${visible(info.title)}"` : ''}${info.forked_from ? ` (forked from ${info.forked_from})` : ''}`,
        `state: ${state}; created ${info.created_at.slice(0, 19).replace('T', ' ')} UTC`,
        `model: ${info.provider ?? 'own endpoint'}/${info.model ?? '?'}`,
        `cwd: ${info.cwd ?? '(default)'}`,
        `spent: ${costText({ usd: cost.estimated_cost_usd, status: cost.cost_status })} · ${cost.tokens.total} tokens`,
        `context: ${contextText(context)}`,
      ].join('\n'),
    ),
  );
}

async function sessions(ctx: CommandContext): Promise<void> {
  const { sessions: rows } = await ctx.call<{
    sessions: { session_id: string; title: string | null; state: string; created_at: string }[];
  }>('session.list', { scope: 'stored', limit: 10, archived: false });
  const lines = rows.map(
    (s) =>
      `${s.session_id === ctx.sessionId ? '*' : ' '} ${s.session_id}  ${s.created_at.slice(0, 16).replace('T', ' ')}  ${s.state.padEnd(7)} ${oneLineOf(visible(s.title ?? '-'), 50)}`,
  );
  ctx.view.writeLine(
    ctx.terminal.style.dim(
      [
        'The newest sessions (* is this one; gatehouse sessions lists them all):',
        ...lines,
        '(go to one with: gatehouse chat --resume <id>)',
      ].join('\n'),
    ),
  );
}

function skill(ctx: CommandContext): void {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  if (ctx.args === '') {
    ctx.view.nextSkill = null;
    return say('Usage: /skill <name> (gatehouse skills lists them); the next message follows it');
  }
  const found = readSkill(ctx.homeRoot, ctx.args);
  if (found === null) return say(`(no skill named "${ctx.args}": gatehouse skills lists them)`);
  ctx.view.nextSkill = { name: found.name, path: found.path, body: found.body };
  say(`(your next message is sent with the skill ${found.name} from ${found.path})`);
}

export const MORE_COMMANDS: readonly ChatCommand[] = [
  {
    name: 'exit',
    usage: '/exit',
    summary: 'leave the chat (the session stays; resume it with gatehouse chat --resume or --continue)',
    run: (ctx) => ctx.leave(),
  },
  {
    name: 'clear',
    usage: '/clear',
    summary: 'clear the screen (the conversation stays; /new starts it over)',
    run: (ctx) => {
      if (ctx.terminal.tty) ctx.terminal.write(CLEAR_SCREEN);
      ctx.view.writeLine(ctx.terminal.style.dim(`(session ${ctx.sessionId})`));
      return Promise.resolve();
    },
  },
  {
    name: 'status',
    usage: '/status',
    summary: 'this session: id, title, state, model, working directory and what it has spent',
    run: (ctx) => status(ctx),
  },
  {
    name: 'sessions',
    usage: '/sessions',
    summary: 'the newest sessions, and how to go to one',
    run: (ctx) => sessions(ctx),
  },
  {
    name: 'skill',
    usage: '/skill <name>',
    summary: "send the next message with a skill's instructions (gatehouse skills lists them)",
    run: (ctx) => {
      skill(ctx);
      return Promise.resolve();
    },
  },
  {
    // The controller runs /reconnect itself (it must work while the link is down).
    name: 'reconnect',
    usage: '/reconnect',
    summary: 'after "gatehouse stop": start the gateway again and reattach now',
    run: (ctx) => {
      ctx.view.writeLine(ctx.terminal.style.dim('(connected to the gateway; nothing to reconnect)'));
      return Promise.resolve();
    },
  },
];
