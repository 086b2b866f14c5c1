/**
 * Slack's native controls: approvals as Block Kit (a section with the prompt and an actions block
 * of four buttons whose action_id binds the click to its prompt and generation), the settled
 * approval (the buttons removed, the outcome or its replacement in their place: Slack buttons cannot be disabled), and
 * slash commands → the command text the shared parser reads.
 */
import type { KnownBlock } from '@slack/web-api';
import type { ApprovalBinding, ApprovalPrompt, ApprovalResult } from '../../../domain/messaging/adapter.js';
import {
  APPROVAL_CHOICES,
  APPROVAL_LABELS,
  approvalButtonId,
  nativeCommandText,
  outcomeLine,
  type ApprovalChoice,
} from '../native-controls.js';

/** Slack's limit on a section block's text. */
const SECTION_TEXT_LIMIT = 3000;
/** Slack's limit on an action_id. */
const ACTION_ID_LIMIT = 255;

const STYLES: Partial<Record<ApprovalChoice, 'primary' | 'danger'>> = { once: 'primary', deny: 'danger' };

function section(text: string): KnownBlock {
  return { type: 'section', text: { type: 'mrkdwn', text: text.slice(0, SECTION_TEXT_LIMIT) } };
}

/** The blocks of an open approval: its text and one button per choice. */
export function approvalBlocks(prompt: ApprovalPrompt): KnownBlock[] {
  return [
    section(prompt.text),
    {
      type: 'actions',
      block_id: `gh_approval_${prompt.execution_generation}`,
      elements: APPROVAL_CHOICES.map((choice) => ({
        type: 'button',
        text: { type: 'plain_text', text: APPROVAL_LABELS[choice] },
        action_id: approvalButtonId(choice, prompt, ACTION_ID_LIMIT),
        value: choice,
        ...(STYLES[choice] === undefined ? {} : { style: STYLES[choice] }),
      })),
    },
  ];
}

/** The blocks of a settled approval: the buttons are gone, the outcome is said. */
export function settledBlocks(
  prompt: ApprovalBinding & { text: string },
  result: ApprovalResult,
): KnownBlock[] {
  return [
    section(prompt.text),
    { type: 'context', elements: [{ type: 'mrkdwn', text: outcomeLine(result) }] },
  ];
}

/**
 * A slash command → the chat command text. A command named after one of ours (`/stop`, `/queue
 * later`) is that command; any other command the app defines (`/gatehouse stop`) takes its first
 * word as ours. Null when neither names a chat command.
 */
export function slashCommandText(command: string, text: string): string | null {
  const own = nativeCommandText(command.replace(/^\//, '').toLowerCase(), text);
  if (own !== null) return own;
  const match = /^\s*\/?([a-z]+)(?:\s+([\s\S]*))?$/i.exec(text);
  return match === null ? null : nativeCommandText(match[1]!.toLowerCase(), match[2] ?? '');
}
