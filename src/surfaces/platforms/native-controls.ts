/**
 * What every platform with buttons and slash commands shares: the chat commands offered as native
 * commands, the four approval choices a prompt's buttons carry, the id that binds a click to its
 * exact prompt and generation, how a settled approval reads, the ask/settle logic over a
 * platform's button messages, and the one-line rendering of a tool call. The adapters supply their
 * own wire shapes (Discord components, Slack Block Kit, Telegram keyboards) and requests.
 */
import type {
  ApprovalBinding,
  ApprovalControls,
  ApprovalPrompt,
  ApprovalResult,
} from '../../domain/messaging/adapter.js';
import { typedApprovalText } from '../../domain/messaging/commands.js';

export interface CommandSpec {
  readonly name: string;
  readonly description: string;
  readonly option?: { name: string; description: string; required: boolean; choices?: readonly string[] };
}

/** The chat commands a platform registers or accepts as its own slash commands. */
export const SLASH_COMMANDS: readonly CommandSpec[] = [
  { name: 'new', description: 'Start a new conversation (queued messages are dropped)' },
  { name: 'reset', description: 'Start a new conversation (same as /new)' },
  { name: 'stop', description: 'Interrupt the running turn and drop the message waiting behind it' },
  {
    name: 'queue',
    description: 'Run a message as its own turn after the current ones',
    option: { name: 'message', description: 'The message to queue', required: true },
  },
  { name: 'status', description: 'What this conversation is doing' },
  { name: 'undo', description: 'Forget the last exchange' },
  { name: 'retry', description: 'Forget the last exchange and send its message again' },
  {
    name: 'approve',
    description: 'Allow the pending approval',
    option: {
      name: 'scope',
      description: 'once (default), for this session, or always',
      required: false,
      choices: ['once', 'session', 'always'],
    },
  },
  { name: 'deny', description: 'Refuse the pending approval' },
  { name: 'compress', description: 'Summarise the older part of the conversation to make room' },
  { name: 'cost', description: 'What this conversation has cost so far' },
  {
    name: 'budget',
    description: 'Where this conversation stands against its budget; continue once, or raise it',
    option: {
      name: 'action',
      description: 'continue, or raise --tokens N --usd X (empty: show)',
      required: false,
    },
  },
  { name: 'help', description: 'The list of commands' },
];

/** `/name argument` for a native command, or null for a name that is not one of ours. */
export function nativeCommandText(name: string, argument: string): string | null {
  if (!SLASH_COMMANDS.some((c) => c.name === name)) return null;
  const rest = argument.trim();
  return rest === '' ? `/${name}` : `/${name} ${rest}`;
}

export const APPROVAL_CHOICES = ['once', 'session', 'always', 'deny'] as const;
export type ApprovalChoice = (typeof APPROVAL_CHOICES)[number];

export const APPROVAL_LABELS: Record<ApprovalChoice, string> = {
  once: 'Approve once',
  session: 'Approve for session',
  always: 'Always approve',
  deny: 'Deny',
};

/** `gh:<choice>:<generation>:<prompt id>`, cut to `max` characters (Discord allows 100). */
export function approvalButtonId(choice: ApprovalChoice, prompt: ApprovalBinding, max: number): string {
  return `gh:${choice}:${prompt.execution_generation}:${prompt.prompt_id}`.slice(0, max);
}

/** A clicked approval button's id → the command text and the prompt it answers; null: not ours. */
export function parseApprovalClick(id: string): { text: string; prompt: ApprovalBinding } | null {
  const match = /^gh:(once|session|always|deny):(\d+):(.+)$/.exec(id);
  if (match === null) return null;
  const choice = match[1] as ApprovalChoice;
  return {
    text: choice === 'deny' ? '/deny' : `/approve ${choice}`,
    prompt: { prompt_id: match[3]!, execution_generation: Number(match[2]) },
  };
}

/** What a settled approval's message says in place of its buttons. */
export function outcomeLine(result: ApprovalResult): string {
  return result === 'replaced'
    ? 'Replaced: the gateway restarted and asked this again in a newer message; these buttons no longer answer it.'
    : `Answered: ${result}.`;
}

/** The text of a settled approval's message. */
export function settledText(prompt: ApprovalPrompt, result: ApprovalResult): string {
  return `${prompt.text}\n\n${outcomeLine(result)}`;
}

/**
 * The two requests one platform's approval buttons take, in its own wire shape `Controls`: post a
 * message with controls, and edit one (its text and controls) where it was posted.
 */
export interface ButtonMessages<Controls> {
  /** The platform's limit on one message's text. */
  readonly limit: number;
  /** The open prompt's buttons; null: they cannot be rendered (the prompt is asked as text). */
  open(prompt: ApprovalPrompt): Controls | null;
  /** The settled prompt's controls: its buttons disabled or gone. */
  closed(prompt: ApprovalPrompt, result: ApprovalResult): Controls;
  post(chatId: string, threadId: string | null, text: string, controls: Controls | null): Promise<string>;
  edit(
    chatId: string,
    threadId: string | null,
    messageId: string,
    text: string,
    controls: Controls,
  ): Promise<void>;
}

/**
 * Approval controls over a platform's button messages: every platform asks and settles the same
 * way (the prompt's text with its buttons; once settled or replaced, the text with its outcome and
 * the buttons disabled), only the requests differ.
 */
export function buttonApprovals<Controls>(io: ButtonMessages<Controls>): ApprovalControls {
  return {
    ask: async (chatId, threadId, prompt) => {
      const controls = io.open(prompt);
      const text = controls === null ? typedApprovalText(prompt) : prompt.text;
      return { message_id: await io.post(chatId, threadId, text.slice(0, io.limit), controls) };
    },
    settle: (chatId, threadId, messageId, prompt, result) =>
      io.edit(
        chatId,
        threadId,
        messageId,
        settledText(prompt, result).slice(0, io.limit),
        io.closed(prompt, result),
      ),
  };
}

/** `⚙ terminal: ls -la`: the tool and its arguments (a command when there is one), short. */
export function toolLine(call: { name: string; arguments: string }): string {
  let detail = call.arguments;
  try {
    const parsed = JSON.parse(call.arguments) as Record<string, unknown>;
    if (typeof parsed.command === 'string') detail = parsed.command;
  } catch {
    // not JSON: shown as it came
  }
  const short = detail.length > 300 ? `${detail.slice(0, 300)}…` : detail;
  return `⚙ ${call.name}: \`${short.replace(/`/g, "'")}\``;
}
