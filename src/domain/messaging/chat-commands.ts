/**
 * Carrying out chat commands (parsed by domain/messaging/commands.ts) on one lane: the queue
 * transitions QUE-2 asks for, the store calls, and the one-line answer. The gateway calls this
 * and then starts whatever the command left waiting (wake-ups survive every command).
 */
import { HELP_TEXT, type BudgetCommand, type ChatCommand } from './commands.js';
import { chatAnswerer, type MappedPrincipal } from '../auth/chat-members.js';
import type { InboundRef, MessageEvent } from './adapter.js';
import * as queue from './queue.js';
import type { PromptBroker } from '../../runtime/approvals/broker.js';
import { NotFoundError } from '../errors.js';
import type { SessionStore } from '../ports/session-store.js';
import type { SessionEntry } from '../vocabulary.js';
import type { RunningTurn } from './turn-types.js';

/**
 * One session key's queue and the turn it is running, as the gateway keeps them. A lane exists
 * while it has work: the gateway frees it once it is idle, nothing waits, no command is being
 * carried out on it and its backlog rows are known to be gone; the next event makes a new one.
 */
/**
 * The answer to a button of an approval a restart asked again under a newer execution generation
 * (REC-7): that button answers nothing, the newer message's buttons do.
 */
export const STALE_APPROVAL_ANSWER =
  'That button belongs to an approval asked before the gateway restarted. The same approval was asked ' +
  'again in a newer message: answer it there.';

export interface Lane {
  readonly key: string;
  state: queue.SessionQueueState<MessageEvent>;
  /** Set from the moment the queue starts an event until its turn has ended. */
  running: RunningTurn | null;
  /** The key's backlog rows as last written, in order (written by lanes.ts); null when a write failed. */
  saved: readonly SavedItem[] | null;
  /** Commands being carried out on the lane (it must not be freed under them). */
  commands: number;
}

/** One backlog row as the lane remembers it. */
export interface SavedItem {
  readonly itemId: string;
  readonly kind: queue.QueuedKind;
  readonly inbound: InboundRef | null;
}

export type InvalidCommand = { name: 'invalid'; message: string };

export interface CommandContext {
  readonly store: SessionStore;
  readonly prompts: PromptBroker;
  /** Puts an event on the lane's queue, starting it when the lane is idle; resolves once it is saved. */
  arrive(lane: Lane, item: queue.QueueItem<MessageEvent>): Promise<void>;
  /** The command dropped events from the lane's queue: settles them in the backlog. */
  dropped(lane: Lane): Promise<void>;
  /** /compress: compresses the key's current session now; the one-line answer. */
  compress(lane: Lane, event: MessageEvent): Promise<string>;
  /** /budget: the answer (budget-command.ts). */
  budget(lane: Lane, event: MessageEvent, command: BudgetCommand): Promise<string>;
  /** The principal the sender is mapped to (auth/chat-members.ts), or null. */
  principalFor(event: MessageEvent): MappedPrincipal | null;
}

/** `/cost`'s answer: the conversation's spend so far (docs/cost.md), one line. */
export function conversationCost(entry: SessionEntry): string {
  const amount = `$${entry.estimated_cost_usd.toFixed(4)}`;
  const cost =
    entry.cost_status === 'reported'
      ? amount
      : entry.cost_status === 'estimated'
        ? `about ${amount} (estimated from token prices)`
        : entry.estimated_cost_usd > 0
          ? `at least ${amount} (some model calls have no price)`
          : 'unknown (the model has no price)';
  return `This conversation has cost ${cost} · ${entry.total_tokens} tokens (${entry.input_tokens} in, ${entry.output_tokens} out).`;
}

export async function carryOutCommand(
  ctx: CommandContext,
  lane: Lane,
  event: MessageEvent,
  command: ChatCommand | InvalidCommand,
  reply: (text: string) => Promise<unknown>,
): Promise<CommandOutcome> {
  const store = ctx.store;
  switch (command.name) {
    case 'invalid':
      await reply(command.message);
      break;
    case 'help':
      await reply(HELP_TEXT);
      break;
    case 'queue': {
      const saved = ctx.arrive(lane, { kind: 'queued', payload: { ...event, text: command.text } });
      const depth = queue.queueDepth(lane.state);
      // Saved before the answer: what the chat was told is queued survives a restart.
      await saved;
      await reply(`Queued (${depth} waiting).`);
      break;
    }
    case 'stop': {
      lane.state = queue.stop(lane.state);
      const running = lane.running;
      await ctx.dropped(lane);
      if (running !== null) {
        // Seed §2: /stop is the hard signal; the next message starts a fresh session.
        await store.suspendSession(lane.key);
        running.abort.abort('interrupted');
      }
      await reply(running !== null ? 'Stopped.' : 'Nothing is running.');
      return running !== null ? 'ok' : 'nothing_running';
    }
    case 'new':
    case 'reset': {
      lane.state = queue.clearForReset(lane.state);
      lane.running?.abort.abort('interrupted');
      await ctx.dropped(lane);
      const before = await store.getOrCreateSession(lane.key, event.source.toJSON());
      await store.resetSession(lane.key);
      ctx.prompts.forgetSession(before.entry.session_id);
      await reply('Started a new conversation.');
      break;
    }
    case 'status': {
      const running = lane.running !== null;
      const depth = queue.queueDepth(lane.state);
      const entry = (await store.getOrCreateSession(lane.key, event.source.toJSON())).entry;
      await reply(
        `Session ${entry.session_id}: ${running ? 'working' : 'idle'}, ${depth} waiting` +
          `${lane.running?.approval ? ', an approval is pending' : ''}.`,
      );
      break;
    }
    case 'cost': {
      const entry = (await store.getOrCreateSession(lane.key, event.source.toJSON())).entry;
      await reply(conversationCost(entry));
      break;
    }
    case 'resume': {
      if (lane.running !== null) {
        await reply('A turn is running; /stop it first.');
        break;
      }
      const current = (await store.getOrCreateSession(lane.key, event.source.toJSON())).entry;
      if (current.session_id === command.sessionId) {
        await reply(`Already in conversation ${command.sessionId}.`);
        break;
      }
      let switched: Awaited<ReturnType<SessionStore['switchSession']>>;
      try {
        // Compare-and-swap: a /new or /resume that changed the conversation meanwhile wins.
        switched = await store.switchSession(lane.key, command.sessionId, {
          expectedSessionId: current.session_id,
          sameKey: true,
        });
      } catch (error) {
        if (!(error instanceof NotFoundError)) throw error;
        await reply(`This chat has no conversation ${command.sessionId}.`);
        break;
      }
      if (switched === null) {
        await reply('The conversation changed meanwhile (another /new or /resume); nothing was switched.');
        break;
      }
      ctx.prompts.forgetSession(current.session_id);
      await reply(`Resumed conversation ${command.sessionId}.`);
      break;
    }
    case 'undo':
    case 'retry': {
      if (lane.running !== null) {
        await reply('A turn is running; /stop it first.');
        break;
      }
      const entry = (await store.getOrCreateSession(lane.key, event.source.toJSON())).entry;
      const undone = await store.rewindSession(entry.session_id, 1);
      if (undone.turns_undone === 0 || undone.target_text === null) {
        await reply('There is nothing to undo.');
        break;
      }
      if (command.name === 'undo') {
        await reply('Undid the last exchange.');
      } else {
        await reply('Retrying the last message.');
        await ctx.arrive(lane, { kind: 'message', payload: { ...event, text: undone.target_text } });
      }
      break;
    }
    case 'compress': {
      // The lane's slot: a compression never runs beside a turn of the same session.
      await reply(
        lane.running !== null
          ? 'A turn is running; /compress once it has ended.'
          : await ctx.compress(lane, event),
      );
      break;
    }
    case 'budget':
      await reply(await ctx.budget(lane, event, command));
      break;
    case 'approve':
    case 'deny': {
      const running = lane.running;
      const pending = running?.approval;
      // A button names its prompt: it answers that one, never a newer one asked meanwhile.
      const bound = event.prompt;
      if (running == null || pending == null || running.sessionId === null) {
        await reply(bound === undefined ? 'No approval is waiting.' : 'That approval is no longer open.');
        return 'not_open';
      }
      const result = ctx.prompts.respondApproval({
        session_id: running.sessionId,
        prompt_id: bound?.prompt_id ?? pending.prompt_id,
        execution_generation: bound?.execution_generation ?? pending.execution_generation,
        choice: command.name === 'deny' ? 'deny' : command.choice,
        answered_by: chatAnswerer(event.source, ctx.principalFor(event)),
      });
      await reply(
        result.status === 'resolved'
          ? command.name === 'deny'
            ? 'Denied.'
            : 'Approved.'
          : result.status === 'stale_generation'
            ? STALE_APPROVAL_ANSWER
            : 'That approval is no longer open.',
      );
      return result.status === 'resolved'
        ? 'ok'
        : result.status === 'stale_generation'
          ? 'stale'
          : 'not_open';
    }
  }
  return 'ok';
}

/** How a command ended, as an audit row's outcome: `ok`, or why it did nothing. */
export type CommandOutcome = 'ok' | 'nothing_running' | 'not_open' | 'stale';
