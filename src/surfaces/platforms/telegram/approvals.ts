/**
 * Approval prompts as Telegram inline keyboards. Pure: no grammY runtime, only its types.
 *
 * A button's callback_data names the choice and the exact prompt it answers, compactly, since
 * Telegram allows 1-64 bytes: `gh:<choice>:<generation>:<prompt id>`, where the choice is one
 * letter (o once, s session, a always, d deny) and the execution generation is written in base 36.
 * A prompt id (`prm_` + 22 base64url characters) makes it about 35 bytes. Data that would not fit
 * is never sent: the prompt then goes out as text, answered by a typed /approve or /deny.
 */
import type { InlineKeyboardMarkup } from 'grammy/types';
import type { ApprovalBinding } from '../../../domain/messaging/adapter.js';

/** Telegram's limit on one button's callback_data, in bytes. */
export const CALLBACK_DATA_LIMIT = 64;

const CHOICES = { o: '/approve once', s: '/approve session', a: '/approve always', d: '/deny' } as const;
type ChoiceLetter = keyof typeof CHOICES;

const LABELS: Record<ChoiceLetter, string> = {
  o: 'Approve once',
  s: 'Approve for session',
  a: 'Always approve',
  d: 'Deny',
};

export function callbackData(choice: ChoiceLetter, prompt: ApprovalBinding): string {
  return `gh:${choice}:${prompt.execution_generation.toString(36)}:${prompt.prompt_id}`;
}

/** The keyboard of an open approval (two rows of two), or null when its data would not fit. */
export function approvalKeyboard(prompt: ApprovalBinding): InlineKeyboardMarkup | null {
  const button = (choice: ChoiceLetter) => ({
    text: LABELS[choice],
    callback_data: callbackData(choice, prompt),
  });
  const fits = (['o', 's', 'a', 'd'] as const).every(
    (choice) => Buffer.byteLength(callbackData(choice, prompt)) <= CALLBACK_DATA_LIMIT,
  );
  if (!fits) return null;
  return {
    inline_keyboard: [
      [button('o'), button('s')],
      [button('a'), button('d')],
    ],
  };
}

/** A button's callback_data → the command it stands for and the prompt it answers; null: not ours. */
export function parseCallbackData(data: string): { text: string; prompt: ApprovalBinding } | null {
  const match = /^gh:([osad]):([0-9a-z]{1,11}):(\S+)$/.exec(data);
  if (match === null) return null;
  return {
    text: CHOICES[match[1] as ChoiceLetter],
    prompt: { prompt_id: match[3]!, execution_generation: parseInt(match[2]!, 36) },
  };
}
