/**
 * The chat's own commands: a line that is exactly `/name` (plus arguments where a command takes
 * them) runs here instead of going to the agent. Any other line — `/words` this table does not
 * know included — is sent to the agent as it is. The table is additive: a new command is one entry.
 *
 * Commands that change the session (reset, undo, retry) carry a request_id chosen when the line is
 * taken; if the link drops before the answer, the same line is run again with the same id after the
 * reconnect, and the gateway answers the repeat without doing it twice.
 */
import { combineCostStatus, type CostStatus } from '../../../domain/vocabulary.js';
import {
  contextText,
  costText,
  tokenCountsText,
  tokensText,
  type ContextView,
} from '../../client/usage-text.js';
import type { SessionView, ChatTerminal } from './session-view.js';
import type { Call } from './wire.js';
import { JOB_COMMANDS } from './job-commands.js';
import { DELEGATION_COMMANDS } from './delegation-commands.js';
import { MORE_COMMANDS } from './more-commands.js';
import { budgetLines, raiseParams, type BudgetView } from '../budget-view.js';

export interface CommandContext {
  sessionId: string;
  /** The id this run of the command keeps across a reconnect. */
  requestId: string;
  /** What follows the command word, trimmed. */
  args: string;
  call: Call;
  view: SessionView;
  terminal: ChatTerminal;
  /** The home's root (skills are read from it). */
  homeRoot: string;
  /** Ends the chat: detaches, the session stays. */
  leave(): Promise<void>;
}

export interface ChatCommand {
  name: string;
  usage: string;
  summary: string;
  run(ctx: CommandContext): Promise<void>;
}

const resetCommand = (name: string): ChatCommand => ({
  name,
  usage: `/${name}`,
  summary:
    'start over with an empty history (same session, policy and cwd; queued messages stay; background delegations stop unless kept)',
  run: async (ctx) => {
    // The `session.reset` event tells every viewer, this chat included.
    await ctx.call('session.reset', { session_id: ctx.sessionId, request_id: ctx.requestId });
  },
});

export const CHAT_COMMANDS: readonly ChatCommand[] = [
  {
    name: 'help',
    usage: '/help',
    summary: 'list these commands',
    run: (ctx) => {
      ctx.view.writeLine(helpText());
      return Promise.resolve();
    },
  },
  resetCommand('new'),
  resetCommand('reset'),
  {
    name: 'undo',
    usage: '/undo',
    summary: 'undo your last message and everything after it',
    run: async (ctx) => {
      const undone = await ctx.call<{ turns_undone: number }>('session.undo', {
        session_id: ctx.sessionId,
        request_id: ctx.requestId,
      });
      if (undone.turns_undone === 0) ctx.view.writeLine(ctx.terminal.style.dim('(nothing to undo)'));
    },
  },
  {
    name: 'retry',
    usage: '/retry',
    summary: 'undo your last message and send it again',
    run: async (ctx) => {
      const receipt = await ctx.call<{
        admission_id: string;
        submission_id: string;
        text: string;
        state: string;
      }>('session.retry', { session_id: ctx.sessionId, request_id: ctx.requestId });
      // The retried text shows as the next `you>` line, from the transcript, like any message.
      const mine = {
        submissionId: receipt.submission_id,
        text: receipt.text,
        admissionId: null,
        acknowledged: true,
      };
      ctx.view.inflight = mine;
      ctx.view.acknowledge(mine, receipt);
    },
  },
  {
    name: 'resolve',
    usage: '/resolve',
    summary:
      'settle a turn that was running when the gateway died (its effect is unknown) as interrupted, so the queue runs again',
    run: async (ctx) => {
      const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
      const unknown = [...ctx.view.unknown];
      if (unknown.length === 0) return say('(nothing to resolve: no turn of this session is in doubt)');
      // The same call as the dashboard's Resolve: the turn is settled as interrupted.
      for (const a of unknown) {
        await ctx.call('prompt.resolve_unknown', {
          session_id: ctx.sessionId,
          admission_id: a.admission_id,
          execution_generation: a.execution_generation ?? 0,
        });
        ctx.view.unknown = ctx.view.unknown.filter((u) => u.admission_id !== a.admission_id);
      }
      say('(resolved: that turn is settled as interrupted; queued messages run now)');
    },
  },
  {
    name: 'compress',
    usage: '/compress',
    summary: 'summarise the older part of the conversation now (waits for a running turn)',
    run: async (ctx) => {
      const result = await ctx.call<{ compressed: boolean; messages?: number; why?: string }>(
        'session.compress',
        { session_id: ctx.sessionId },
      );
      // A compression is announced by its session.compressed event, to every viewer (and before
      // this answer): only a refusal is said here.
      if (!result.compressed)
        ctx.view.writeLine(ctx.terminal.style.dim(`(nothing was compressed: ${result.why})`));
    },
  },
  {
    name: 'model',
    usage: '/model [provider/model]',
    summary: 'show the model this session runs on and the choices, or move it to another (between turns)',
    run: (ctx) => switchModel(ctx),
  },
  {
    name: 'rollback',
    usage: '/rollback [n]',
    summary: 'list the checkpoints of the working directory, or restore checkpoint n (asks first)',
    run: (ctx) => rollback(ctx),
  },
  {
    name: 'cost',
    usage: '/cost',
    summary: "what this session has cost so far, and your turns' cost today",
    run: (ctx) => showCost(ctx),
  },
  {
    name: 'budget',
    usage: '/budget [continue | raise --tokens N --usd X]',
    summary:
      "this session's budget: what is spent and left; let a paused session run one more turn; raise it (operators)",
    run: (ctx) => budget(ctx),
  },
  {
    name: 'fork',
    usage: '/fork [n]',
    summary:
      'branch this conversation into a new session (this one stays as it is); with n, without your last n messages',
    run: (ctx) => fork(ctx),
  },
  {
    // The chat controller runs /title itself (it works while a turn runs); listed here for /help.
    name: 'title',
    usage: '/title <text>',
    summary: 'name this session (gatehouse sessions shows it)',
    run: async (ctx) => {
      await ctx.call('session.title', { session_id: ctx.sessionId, title: ctx.args });
    },
  },
  {
    // The chat controller runs /steer itself (it works while a turn runs); listed here for /help.
    name: 'steer',
    usage: '/steer <text>',
    summary:
      'correct the running turn: the model gets the text before its next call (if the turn ends first, it is your next message)',
    run: async (ctx) => {
      await ctx.call('session.steer', {
        session_id: ctx.sessionId,
        submission_id: ctx.requestId,
        text: ctx.args,
      });
    },
  },
  ...JOB_COMMANDS,
  ...DELEGATION_COMMANDS,
  ...MORE_COMMANDS,
];

interface SessionCostView {
  estimated_cost_usd: number;
  cost_status: CostStatus;
  tokens: { input: number; output: number; cache_read: number; total: number };
}

interface TurnCostView {
  tokens: { input: number; output: number; cache_read: number } | null;
  cost: { usd: number; status: CostStatus } | null;
}

/** `/cost`: the session's spend (session.cost), its last turn's (session.turns), its context (session.context) and the caller's turns today (cost.summary). */
async function showCost(ctx: CommandContext): Promise<void> {
  const session = await ctx.call<SessionCostView>('session.cost', { session_id: ctx.sessionId });
  const today = new Date().toISOString().slice(0, 10);
  const summary = await ctx.call<{
    rows: { cost_status: CostStatus }[];
    total_usd: number;
    turns: number;
  }>('cost.summary', { from_day: today, to_day: today });
  const todayStatus =
    summary.rows.reduce<CostStatus | undefined>((a, r) => combineCostStatus(a, r.cost_status), undefined) ??
    'reported';
  const { turns } = await ctx.call<{ turns: TurnCostView[] }>('session.turns', {
    session_id: ctx.sessionId,
    limit: 1,
  });
  const last = turns[0];
  const lastLine =
    last?.tokens && last.cost ? [`last turn: ${costText(last.cost)} · ${tokenCountsText(last.tokens)}`] : [];
  const context = await ctx.call<ContextView>('session.context', { session_id: ctx.sessionId });
  ctx.view.writeLine(
    ctx.terminal.style.dim(
      [
        `this session: ${costText({ usd: session.estimated_cost_usd, status: session.cost_status })} · ${tokensText(session.tokens)}`,
        ...lastLine,
        `context: ${contextText(context)}`,
        `your turns today (UTC): ${summary.turns === 0 ? 'none' : `${costText({ usd: summary.total_usd, status: todayStatus })} over ${summary.turns} turns`}`,
      ].join('\n'),
    ),
  );
}

/** `/budget`, `/budget continue`, `/budget raise --tokens N --usd X` (docs/cost.md, "Budgets"). */
async function budget(ctx: CommandContext): Promise<void> {
  const words = ctx.args.split(/\s+/).filter(Boolean);
  const session_id = ctx.sessionId;
  const say = (lines: string[]) => ctx.view.writeLine(ctx.terminal.style.dim(lines.join('\n')));
  if (words.length === 0)
    return say(budgetLines(await ctx.call<BudgetView>('session.budget', { session_id })));
  if (words[0] === 'continue' && words.length === 1) {
    await ctx.call('session.budget.continue', { session_id });
    return say(['The next turn of this session may run past its budget, once.']);
  }
  if (words[0] === 'raise') {
    const flags: Record<string, string | undefined> = {};
    for (let i = 1; i < words.length; i += 2) flags[words[i]!] = words[i + 1];
    const unknown = Object.keys(flags).filter((f) => f !== '--tokens' && f !== '--usd');
    const raised =
      unknown.length > 0 ? `unknown option ${unknown[0]}` : raiseParams(flags['--tokens'], flags['--usd']);
    if (typeof raised === 'string') return say([`(${raised}; usage: /budget raise --tokens N --usd X)`]);
    return say(budgetLines(await ctx.call<BudgetView>('session.budget.raise', { session_id, ...raised })));
  }
  say(['(usage: /budget, /budget continue, or /budget raise --tokens N --usd X)']);
}

interface PageView {
  messages: { id: number; role: string }[];
  has_more: boolean;
}

/**
 * The message a fork that leaves out the last `n` user messages ends at (and what followed them),
 * reading the transcript a page at a time from its end; null when it has no such message.
 */
async function forkPoint(ctx: CommandContext, n: number): Promise<number | null> {
  const seen: PageView['messages'] = [];
  let before: number | undefined;
  for (;;) {
    const page = await ctx.call<PageView>('session.messages', {
      session_id: ctx.sessionId,
      limit: 500,
      ...(before === undefined ? {} : { before_id: before }),
    });
    seen.unshift(...page.messages);
    let users = 0;
    for (let i = seen.length - 1; i >= 0; i--) {
      if (seen[i]!.role === 'user' && ++users === n) {
        if (i > 0) return seen[i - 1]!.id;
        if (!page.has_more) return null;
      }
    }
    if (!page.has_more || page.messages.length === 0) return null;
    before = page.messages[0]!.id;
  }
}

/** `/fork` and `/fork n` (session.fork): a new session to go on in; this one is untouched. */
async function fork(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  if (ctx.args !== '' && !/^[1-9]\d*$/.test(ctx.args))
    return say('Usage: /fork (the whole conversation) or /fork <n> (without your last n messages)');
  const n = ctx.args === '' ? 0 : Number(ctx.args);
  const messageId = n === 0 ? undefined : await forkPoint(ctx, n);
  if (n > 0 && messageId == null) return say(`(nothing to fork: fewer than ${n + 1} of your messages)`);
  const forked = await ctx.call<{ session_id: string; info: { title: string | null } }>('session.fork', {
    session_id: ctx.sessionId,
    request_id: ctx.requestId,
    ...(messageId == null ? {} : { message_id: messageId }),
  });
  say(
    `(forked into ${forked.session_id}${forked.info.title ? ` "${forked.info.title}"` : ''}; ` +
      `go on there with: gatehouse chat --resume ${forked.session_id})`,
  );
}

interface CheckpointView {
  checkpoint: number;
  created_at: string;
  kind: string;
  label: string;
  files: number;
}

/**
 * `/rollback` lists the session's checkpoints; `/rollback n` restores one. The restore asks for its
 * own approval (answered like any other); the `checkpoint.restored` event tells every viewer.
 */
async function rollback(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  if (ctx.args === '') {
    const { checkpoints } = await ctx.call<{ checkpoints: CheckpointView[] }>('checkpoint.list', {
      session_id: ctx.sessionId,
    });
    if (checkpoints.length === 0)
      return say('(no checkpoints yet: one is taken before each tool call that may change files)');
    const lines = checkpoints.map(
      (c) =>
        `  ${String(c.checkpoint).padStart(3)}  ${c.created_at.slice(0, 19).replace('T', ' ')}  ${c.label} (${c.files} files)`,
    );
    return say(['Checkpoints (restore one with /rollback <n>):', ...lines].join('\n'));
  }
  if (!/^[1-9]\d*$/.test(ctx.args))
    return say('Usage: /rollback (lists checkpoints) or /rollback <n> (restores one)');
  const result = await ctx.call<{ restored: boolean; why?: string }>('checkpoint.restore', {
    session_id: ctx.sessionId,
    checkpoint: Number(ctx.args),
  });
  if (!result.restored) say(`(checkpoint ${ctx.args} was not restored: ${result.why ?? 'refused'})`);
}

/** The command a line names, with its arguments; null when the line is for the agent. */
export function parseCommand(line: string): { command: ChatCommand; args: string } | null {
  const match = /^\/([a-z][a-z0-9_-]*)(?:\s+(.*))?$/.exec(line.trim());
  if (!match) return null;
  const command = CHAT_COMMANDS.find((c) => c.name === match[1]);
  return command ? { command, args: (match[2] ?? '').trim() } : null;
}

export function helpText(): string {
  const width = Math.max(...CHAT_COMMANDS.map((c) => c.usage.length));
  return [
    'Commands:',
    ...CHAT_COMMANDS.map((c) => `  ${c.usage.padEnd(width)}  ${c.summary}`),
    'Any other line, including other /words, is sent to the agent.',
    'A paste of several lines is one message; so is everything between two lines of """ (multi-line mode).',
  ].join('\n');
}

interface DescribedProvider {
  name: string;
  default: boolean;
  models: string[];
  any_model?: boolean;
}

/**
 * `/model` shows the session's provider and model and what runtime.describe offers; `/model
 * <provider>/<model>` (or `/model <model>` on the same provider) calls session.model. The change is
 * announced by its `session.model` event, to every viewer.
 */
async function switchModel(ctx: CommandContext): Promise<void> {
  const say = (text: string) => ctx.view.writeLine(ctx.terminal.style.dim(text));
  if (ctx.args !== '') {
    const slash = ctx.args.indexOf('/');
    const choice =
      slash > 0
        ? { provider: ctx.args.slice(0, slash), model: ctx.args.slice(slash + 1) }
        : { model: ctx.args };
    await ctx.call('session.model', { session_id: ctx.sessionId, ...choice });
    return;
  }
  const info = await ctx.call<{ provider: string | null; model: string | null }>('session.info', {
    session_id: ctx.sessionId,
  });
  const described = await ctx.call<{ session_create?: { providers?: DescribedProvider[] } }>(
    'runtime.describe',
    {},
  );
  say(`(model: ${info.provider ?? 'own endpoint'}/${info.model ?? '?'})`);
  for (const p of described.session_create?.providers ?? []) {
    const open = p.any_model ? ', or any name' : '';
    say(`  ${p.name}${p.default ? ' (default)' : ''}: ${p.models.join(', ')}${open}`);
  }
  say('(/model <provider>/<model> moves this session)');
}
