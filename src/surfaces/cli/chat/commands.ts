/**
 * The chat's own commands: a line that is exactly `/name` (plus arguments where a command takes
 * them) runs here instead of going to the agent. Any other line — `/words` this table does not
 * know included — is sent to the agent as it is. The table is additive: a new command is one entry.
 *
 * Commands that change the session (reset, undo, retry) carry a request_id chosen when the line is
 * taken; if the link drops before the answer, the same line is run again with the same id after the
 * reconnect, and the gateway answers the repeat without doing it twice.
 */
import type { SessionView, ChatTerminal } from './session-view.js';
import type { Call } from './wire.js';

export interface CommandContext {
  sessionId: string;
  /** The id this run of the command keeps across a reconnect. */
  requestId: string;
  /** What follows the command word, trimmed. */
  args: string;
  call: Call;
  view: SessionView;
  terminal: ChatTerminal;
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
  summary: 'start over with an empty history (same session, policy and cwd; queued messages stay)',
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
    name: 'compress',
    usage: '/compress',
    summary: 'summarise the older part of the conversation now (waits for a running turn)',
    run: async (ctx) => {
      const result = await ctx.call<{ compressed: boolean; messages?: number; why?: string }>(
        'session.compress',
        { session_id: ctx.sessionId },
      );
      ctx.view.writeLine(
        ctx.terminal.style.dim(
          result.compressed
            ? `(compressed: the model now sees ${result.messages} messages, the summary among them)`
            : `(nothing was compressed: ${result.why})`,
        ),
      );
    },
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
];

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
  ].join('\n');
}
