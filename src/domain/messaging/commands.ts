/**
 * Chat commands (issue 6): parsing, the help text, and the text that asks for an approval by typed
 * command. The gateway carries them out.
 */

export type ChatCommand =
  | { name: 'new' | 'reset' | 'stop' | 'status' | 'help' | 'undo' | 'retry' | 'compress' | 'cost' }
  | { name: 'queue'; text: string }
  | { name: 'resume'; sessionId: string }
  | { name: 'approve'; choice: 'once' | 'session' | 'always' }
  | { name: 'deny' }
  | BudgetCommand;

/** `/budget` (docs/cost.md, "Budgets"): show where the conversation stands, continue once, or raise it. */
export type BudgetCommand =
  | { name: 'budget'; action: 'show' }
  | { name: 'budget'; action: 'continue' }
  | { name: 'budget'; action: 'raise'; tokens: number | null; usd: number | null };

const BUDGET_USAGE = 'Usage: /budget, /budget continue, or /budget raise --tokens N --usd X';

const SIMPLE = new Set(['new', 'reset', 'stop', 'status', 'help', 'undo', 'retry', 'compress', 'cost']);

/**
 * The command in `text`, or null for an ordinary message (including an unknown `/word`, which the
 * agent may well understand). Only a bare command is one: a platform that addresses commands to a
 * bot (Telegram's `/new@botname`) strips its own address in its adapter (commandAddress) and
 * decides there what a command addressed to another bot is, so `/new@other` parses as null here.
 */
export function parseCommand(text: string): ChatCommand | { name: 'invalid'; message: string } | null {
  const match = /^\/([a-z]+)(?:\s+([\s\S]*))?$/i.exec(text.trim());
  if (match === null) return null;
  const name = match[1]!.toLowerCase();
  const rest = (match[2] ?? '').trim();
  if (SIMPLE.has(name)) return { name } as ChatCommand;
  if (name === 'queue') {
    return rest === ''
      ? {
          name: 'invalid',
          message: 'Usage: /queue <message>. It runs as its own turn after the current ones.',
        }
      : { name: 'queue', text: rest };
  }
  if (name === 'resume') {
    return /^\d{8}_\d{6}_[0-9a-f]{8}$/.test(rest)
      ? { name: 'resume', sessionId: rest }
      : {
          name: 'invalid',
          message:
            'Usage: /resume <session id>, e.g. /resume 20260101_120000_0a1b2c3d (/status shows the current one).',
        };
  }
  if (name === 'approve') {
    const choice = rest === '' ? 'once' : rest.toLowerCase();
    if (choice !== 'once' && choice !== 'session' && choice !== 'always') {
      return { name: 'invalid', message: 'Usage: /approve [once|session|always]' };
    }
    return { name: 'approve', choice };
  }
  if (name === 'deny') return { name: 'deny' };
  if (name === 'budget') return parseBudget(rest);
  return null;
}

/** `/budget`'s arguments: nothing or `show`, `continue`, or `raise` with `--tokens N` and/or `--usd X`. */
function parseBudget(rest: string): BudgetCommand | { name: 'invalid'; message: string } {
  const [action = 'show', ...args] = rest.split(/\s+/).filter((word) => word !== '');
  const verb = action.toLowerCase();
  if ((verb === 'show' || verb === 'continue') && args.length === 0) return { name: 'budget', action: verb };
  if (verb !== 'raise') return { name: 'invalid', message: BUDGET_USAGE };
  const raised: { tokens: number | null; usd: number | null } = { tokens: null, usd: null };
  for (let i = 0; i < args.length; i += 2) {
    const flag = /^--(tokens|usd)$/.exec(args[i]!.toLowerCase())?.[1] as 'tokens' | 'usd' | undefined;
    const value = Number(args[i + 1]);
    if (flag === undefined || args[i + 1] === undefined || raised[flag] !== null)
      return { name: 'invalid', message: BUDGET_USAGE };
    if (!Number.isFinite(value) || value <= 0)
      return { name: 'invalid', message: `/budget raise: --${flag} must be a number above 0.` };
    raised[flag] = value;
  }
  if (raised.tokens === null && raised.usd === null)
    return { name: 'invalid', message: '/budget raise: name the new limit: --tokens N, --usd X, or both.' };
  return { name: 'budget', action: 'raise', ...raised };
}

/**
 * A `/command@address` split into the bare command text and its address (`@` dropped), or null
 * when `text` does not start with an addressed command.
 */
export function commandAddress(text: string): { bare: string; address: string } | null {
  const match = /^(\s*\/[a-z]\w*)@(\w+)([\s\S]*)$/i.exec(text);
  return match === null ? null : { bare: `${match[1]!}${match[3]!}`, address: match[2]! };
}

export const HELP_TEXT = [
  'Commands:',
  '/new or /reset: start a new conversation (queued messages are dropped)',
  '/stop: interrupt the running turn and drop the message waiting behind it',
  '/queue <message>: run <message> as its own turn after the current ones',
  '/status: what this conversation is doing',
  '/resume <session id>: go back to an earlier conversation of this chat',
  '/undo: forget the last exchange',
  '/retry: forget the last exchange and send its message again',
  '/compress: summarise the older part of the conversation to make room (recent messages stay as they are)',
  '/cost: what this conversation has cost so far',
  '/budget: where this conversation stands against its budget; /budget continue lets a paused one run one more turn, /budget raise --tokens N --usd X raises its limit (operators)',
  '/approve [once|session|always] or /deny: answer the pending approval',
  '/help: this list',
].join('\n');

/**
 * An approval asked as text (no buttons on the platform, or none fit): the typed commands answer
 * it. The gateway asks this way on a platform without approval controls; button platforms fall
 * back to it (surfaces/platforms/native-controls.ts).
 */
export function typedApprovalText(prompt: { text: string }): string {
  return `${prompt.text}\n\nReply /approve (or /approve session, /approve always) to allow it, /deny to refuse.`;
}
