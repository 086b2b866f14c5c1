/**
 * `/budget` on a chat platform (docs/cost.md, "Budgets", issue 29): where the conversation stands
 * against its limits, a continue-once, and a raise of its own limit, with who may do which:
 *
 *   show       anyone who may talk in the chat;
 *   continue   a user mapped to a principal (`platforms.<name>.members`), member or operator, as
 *              `session.budget.continue` needs `session:control` on the session: a stranger the
 *              platform lets talk (a bot open to everyone) must not lift the limit at will;
 *   raise      a user mapped to an operator, as `session.budget.raise` needs `session:operator`.
 *
 * A conversation's budget is its session key's, as its turns reserve it.
 */
import type { BudgetCommand } from './commands.js';
import type { MappedPrincipal } from '../auth/chat-members.js';
import type { BudgetGuard } from '../budget/guard.js';
import { BUDGET_LIMITS, sessionLimit, type BudgetAmount, type Spend } from '../budget/decide.js';
import type { BudgetLedger } from '../ports/budgets.js';

export interface ChatBudget {
  readonly ledger: BudgetLedger;
  readonly guard: BudgetGuard;
}

/** Whose command it is: the conversation's key, whose day it counts, and the sender's principal. */
export interface BudgetCaller {
  readonly sessionKey: string;
  /** The principal the sender's spend is counted for (auth/chat-members.ts chatPrincipal). */
  readonly spender: string;
  readonly mapped: MappedPrincipal | null;
  readonly platform: string;
}

/**
 * What a chat is told after the refusal itself, when its budget pauses it: how it goes on, in the
 * words of what this sender may do.
 */
export function platformBudgetHint(mapped: MappedPrincipal | null): string {
  const waiting = 'Messages sent meanwhile are not answered.';
  if (mapped === null)
    return (
      `${waiting} It goes on once the budget has room again: a new day (UTC) for a daily limit, or when ` +
      'the gateway operator raises it or lets it run one more turn. /budget shows where it stands.'
    );
  const raise =
    mapped.role === 'operator'
      ? ", or /budget raise --tokens N (or --usd X) to raise this conversation's own limit"
      : ', or ask the gateway operator to raise it';
  return `${waiting} Send /budget continue to let it run one more turn${raise}; then send your message again.`;
}

const LABELS = {
  session: 'this conversation',
  principal_daily: 'your day',
  daily: "the gateway's day",
} as const;

function line(label: string, spent: Spend, cap: BudgetAmount): string {
  const tokens = cap.tokens === null ? `${spent.tokens} tokens` : `${spent.tokens} of ${cap.tokens} tokens`;
  const usd = cap.usd === null ? `$${spent.usd.toFixed(4)}` : `$${spent.usd.toFixed(4)} of $${cap.usd}`;
  return `${label}: ${tokens}, ${usd}`;
}

/** The answer to `/budget …`, one message. */
export async function budgetCommand(
  budget: ChatBudget | undefined,
  caller: BudgetCaller,
  command: BudgetCommand,
): Promise<string> {
  if (budget === undefined) return 'This gateway has no budget: nothing is limited.';
  const { ledger, guard } = budget;
  const key = caller.sessionKey;
  switch (command.action) {
    case 'show': {
      const record = await ledger.sessionBudget(key);
      const day = guard.today();
      const profile = guard.limitsFor(null);
      const limits = { ...profile, session: sessionLimit(profile, record) };
      const spent = await ledger.budgetSpends(key, caller.spender, day);
      const lines = BUDGET_LIMITS.map((limit) =>
        line(limit === 'session' ? LABELS[limit] : `${LABELS[limit]} (${day})`, spent[limit], limits[limit]),
      );
      if (record.paused !== null)
        lines.push(
          `Paused: ${record.paused.limit} ${record.paused.measure} used up. ${platformBudgetHint(caller.mapped)}`,
        );
      if (record.continue_once) lines.push('The next turn may run past the limits (continue once).');
      return lines.join('\n');
    }
    case 'continue': {
      if (caller.mapped === null)
        return (
          'Only someone the gateway knows by name may let this conversation run past its budget ' +
          `(platforms.${caller.platform}.members); ask the gateway operator.`
        );
      if ((await ledger.sessionBudget(key)).paused === null)
        return 'This conversation is not paused by its budget: there is nothing to continue.';
      await ledger.continueSessionBudget(key);
      return 'The next turn of this conversation may run past its budget, once. Send your message again.';
    }
    case 'raise': {
      if (caller.mapped?.role !== 'operator')
        return `Only a gateway operator may raise a budget (platforms.${caller.platform}.members maps a user to one).`;
      const current = sessionLimit(guard.limitsFor(null), await ledger.sessionBudget(key));
      const raised = { tokens: command.tokens ?? current.tokens, usd: command.usd ?? current.usd };
      await ledger.raiseSessionBudget(key, raised);
      const words = [
        ...(raised.tokens === null ? [] : [`${raised.tokens} tokens`]),
        ...(raised.usd === null ? [] : [`$${raised.usd}`]),
      ];
      return `This conversation's budget is now ${words.join(' and ')}. Send your message again to go on.`;
    }
  }
}
