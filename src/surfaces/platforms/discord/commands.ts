/**
 * The chat commands as Discord application (slash) commands, and interactions → the command text
 * the shared parser (domain/messaging/commands.ts) reads. One table: what is registered is what is
 * understood. Approval buttons carry their prompt in the custom id.
 */
import {
  ApplicationCommandOptionType,
  ButtonStyle,
  ComponentType,
  type APIActionRowComponent,
  type APIApplicationCommandInteractionDataOption,
  type APIButtonComponent,
  type RESTPutAPIApplicationCommandsJSONBody,
} from 'discord-api-types/v10';
import type { ApprovalBinding, ApprovalPrompt, ApprovalResult } from '../../../domain/messaging/adapter.js';

interface CommandSpec {
  readonly name: string;
  readonly description: string;
  readonly option?: { name: string; description: string; required: boolean; choices?: readonly string[] };
}

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
  { name: 'help', description: 'The list of commands' },
];

/** The body of PUT /applications/{application.id}/commands. */
export function slashCommandsBody(): RESTPutAPIApplicationCommandsJSONBody {
  return SLASH_COMMANDS.map((spec) => ({
    name: spec.name,
    description: spec.description,
    ...(spec.option === undefined
      ? {}
      : {
          options: [
            {
              type: ApplicationCommandOptionType.String,
              name: spec.option.name,
              description: spec.option.description,
              required: spec.option.required,
              ...(spec.option.choices === undefined
                ? {}
                : { choices: spec.option.choices.map((c) => ({ name: c, value: c })) }),
            },
          ],
        }),
  }));
}

/** `/name value` for an invoked slash command, or null for a command this bot never registered. */
export function commandText(
  name: string,
  options: readonly APIApplicationCommandInteractionDataOption[] | undefined,
): string | null {
  const spec = SLASH_COMMANDS.find((c) => c.name === name);
  if (spec === undefined) return null;
  const value = options?.find((o) => o.name === spec.option?.name);
  const argument = value !== undefined && 'value' in value ? String(value.value).trim() : '';
  return argument === '' ? `/${name}` : `/${name} ${argument}`;
}

const CHOICES = ['once', 'session', 'always', 'deny'] as const;
type ButtonChoice = (typeof CHOICES)[number];
const LABELS: Record<ButtonChoice, string> = {
  once: 'Approve once',
  session: 'Approve for session',
  always: 'Always approve',
  deny: 'Deny',
};
const STYLES: Record<
  ButtonChoice,
  ButtonStyle.Success | ButtonStyle.Primary | ButtonStyle.Secondary | ButtonStyle.Danger
> = {
  once: ButtonStyle.Success,
  session: ButtonStyle.Primary,
  always: ButtonStyle.Secondary,
  deny: ButtonStyle.Danger,
};

/** `gh:<choice>:<generation>:<prompt id>`: at most 100 characters, as Discord allows. */
function customId(choice: ButtonChoice, prompt: ApprovalBinding): string {
  return `gh:${choice}:${prompt.execution_generation}:${prompt.prompt_id}`.slice(0, 100);
}

/** The buttons of an approval; all disabled once it is settled. */
export function approvalButtons(
  prompt: ApprovalBinding,
  disabled: boolean,
): APIActionRowComponent<APIButtonComponent>[] {
  return [
    {
      type: ComponentType.ActionRow,
      components: CHOICES.map((choice) => ({
        type: ComponentType.Button,
        style: STYLES[choice],
        label: LABELS[choice],
        custom_id: customId(choice, prompt),
        disabled,
      })),
    },
  ];
}

/** The content of a settled approval's message. */
export function settledText(prompt: ApprovalPrompt, result: ApprovalResult): string {
  return `${prompt.text}\n\nAnswered: ${result}.`;
}

/** A clicked approval button → the command text and the prompt it answers; null: not ours. */
export function parseApprovalClick(id: string): { text: string; prompt: ApprovalBinding } | null {
  const match = /^gh:(once|session|always|deny):(\d+):(.+)$/.exec(id);
  if (match === null) return null;
  const choice = match[1] as ButtonChoice;
  return {
    text: choice === 'deny' ? '/deny' : `/approve ${choice}`,
    prompt: { prompt_id: match[3]!, execution_generation: Number(match[2]) },
  };
}
