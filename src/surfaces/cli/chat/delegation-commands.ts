/**
 * The chat's `/delegate` and `/delegations` (docs/scheduling.md "Background delegations"): the
 * background delegations of this chat's session, through the same delegation.* methods as the CLI
 * and the dashboard.
 *
 *   /delegate <task>                  start one: a child session works on <task> in the background
 *   /delegations                      list this session's delegations
 *   /delegations stop|keep <id>       stop one, or keep it through a /new or /reset
 */
import type { ChatCommand, CommandContext } from './commands.js';

interface DelegationLine {
  delegation_id: string;
  child_session_id: string | null;
  task: string;
  state: string;
  outcome: string | null;
  detail: string | null;
  kept: boolean;
}

function describe(d: DelegationLine): string {
  const state =
    d.state === 'reported' || d.state === 'stopped'
      ? `${d.state}: ${d.outcome ?? '-'}${d.detail ? ` (${d.detail})` : ''}`
      : d.state;
  return `${d.delegation_id}  [${state}]${d.kept ? ' kept' : ''}  child ${d.child_session_id ?? '-'}; "${d.task.replace(/\s+/g, ' ').slice(0, 60)}"`;
}

async function delegate(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  if (ctx.args === '') return say('(usage: /delegate <task>)');
  const { delegation } = await ctx.call<{ delegation: DelegationLine }>('delegation.start', {
    session_id: ctx.sessionId,
    request_id: ctx.requestId,
    task: ctx.args,
  });
  say(`(delegated ${describe(delegation)}; its result arrives here when it ends)`);
}

async function delegations(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  const [action, id] = ctx.args.split(/\s+/).filter(Boolean);
  if (action === undefined) {
    const { delegations: list } = await ctx.call<{ delegations: DelegationLine[] }>('delegation.list', {
      session_id: ctx.sessionId,
    });
    if (list.length === 0) return say('(no delegations: /delegate starts one)');
    for (const d of list) say(describe(d));
    return;
  }
  if (id === undefined || (action !== 'stop' && action !== 'keep'))
    return say('(usage: /delegations · /delegations stop|keep <id>)');
  if (action === 'stop') {
    const { stopped } = await ctx.call<{ stopped: boolean }>('delegation.stop', { delegation_id: id });
    return say(stopped ? `(stopped ${id})` : `(${id} had already ended)`);
  }
  await ctx.call('delegation.keep', { delegation_id: id, kept: true });
  say(`(kept ${id}: /new and /reset no longer stop it)`);
}

export const DELEGATION_COMMANDS: readonly ChatCommand[] = [
  {
    name: 'delegate',
    usage: '/delegate <task>',
    summary: 'hand <task> to a background child session; its result arrives here (docs/scheduling.md)',
    run: delegate,
  },
  {
    name: 'delegations',
    usage: '/delegations [stop|keep <id>]',
    summary: "list this session's background delegations, or stop one, or keep it through /new and /reset",
    run: delegations,
  },
];
