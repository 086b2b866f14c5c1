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
import type { ApprovalBinding } from '../../../domain/messaging/adapter.js';
import {
  APPROVAL_CHOICES,
  APPROVAL_LABELS,
  approvalButtonId,
  nativeCommandText,
  SLASH_COMMANDS,
  type ApprovalChoice,
} from '../native-controls.js';

export { parseApprovalClick, settledText, SLASH_COMMANDS } from '../native-controls.js';

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
  const value = options?.find((o) => o.name === spec?.option?.name);
  return nativeCommandText(name, value !== undefined && 'value' in value ? String(value.value) : '');
}

const STYLES: Record<
  ApprovalChoice,
  ButtonStyle.Success | ButtonStyle.Primary | ButtonStyle.Secondary | ButtonStyle.Danger
> = {
  once: ButtonStyle.Success,
  session: ButtonStyle.Primary,
  always: ButtonStyle.Secondary,
  deny: ButtonStyle.Danger,
};

/** The buttons of an approval; all disabled once it is settled. */
export function approvalButtons(
  prompt: ApprovalBinding,
  disabled: boolean,
): APIActionRowComponent<APIButtonComponent>[] {
  return [
    {
      type: ComponentType.ActionRow,
      components: APPROVAL_CHOICES.map((choice) => ({
        type: ComponentType.Button,
        style: STYLES[choice],
        label: APPROVAL_LABELS[choice],
        custom_id: approvalButtonId(choice, prompt, 100),
        disabled,
      })),
    },
  ];
}
