/**
 * What a chat sees of a messaging turn's events: approvals (with the platform's buttons, or as
 * text), questions, tool calls; and, for a turn resumed after a crash (REC-7), the earlier message
 * of a prompt it asks again edited to say it was replaced. The message showing each prompt is
 * recorded on the turn's marker once the platform answered the send, so a later process can edit it.
 */
import type { ApprovalResult, MessageEvent, PlatformAdapter } from './adapter.js';
import type { ApprovalOutcome, TurnEvent } from '../../runtime/types.js';
import type { PlatformPrompt } from '../ports/delivery-ledger.js';
import { typedApprovalText } from './commands.js';
import type { PendingApproval, RunningTurn, TurnDeps } from './turn-types.js';

/** What a prompt's earlier message says once a restart asked the same prompt again (REC-7). */
export const REPLACED_PROMPT_LINE =
  'Replaced: the gateway restarted and asked this again in a newer message.';

function approvalResultOf(outcome: ApprovalOutcome): ApprovalResult {
  if (outcome.kind === 'denied') return 'denied';
  if (outcome.kind === 'timeout') return 'expired';
  if (outcome.kind === 'cancelled') return 'cancelled';
  if (outcome.choice === 'session') return 'approved for the session';
  if (outcome.choice === 'always') return 'approved always';
  return 'approved once';
}

/**
 * Where a turn's prompts are shown: the marker's turn (whose prompt record gets the message id of
 * each prompt once sent) and the prompt a crash interrupted, whose earlier message is edited to say
 * it was replaced when the resumed turn asks the same prompt again under its new generation.
 */
export interface PromptShowing {
  readonly turnId: string;
  interrupted: PlatformPrompt | null;
}

/**
 * The earlier message of a prompt the resumed turn asks again (same id, newer generation): its
 * buttons edited away, its text saying it was replaced. Taken once. Null: none to replace.
 */
function replacedMessage(shown: PromptShowing, promptId: string, generation: number): PlatformPrompt | null {
  const old = shown.interrupted;
  if (old?.prompt_id !== promptId || old.message_id === undefined) return null;
  if ((old.execution_generation ?? 1) >= generation) return null;
  shown.interrupted = null;
  return old;
}

export function onTurnEvent(
  deps: TurnDeps,
  sessionKey: string,
  adapter: PlatformAdapter,
  event: MessageEvent,
  running: RunningTurn,
  turnEvent: TurnEvent,
  shown: PromptShowing,
): void {
  const chatId = event.source.chat_id;
  const threadId = event.source.thread_id;
  const post = (text: string): Promise<string | null> =>
    adapter.send(chatId, text, { thread_id: threadId, reply_to: null }).then(
      (sent) => sent[0]?.message_id ?? null,
      () => null,
    );
  // The message showing a prompt, into the prompt's record: a later process edits it once replaced.
  const remember = (promptId: string, message: Promise<string | null>): void =>
    void message
      .then((id) =>
        id === null ? undefined : deps.ledger.recordPromptShown(sessionKey, shown.turnId, promptId, id),
      )
      .catch(() => undefined);
  const replaceText = (old: PlatformPrompt, text: string): void =>
    void adapter.edit(chatId, old.message_id!, `${text}\n\n${REPLACED_PROMPT_LINE}`).catch(() => undefined);
  if (turnEvent.type === 'approval.request') {
    const prompt = {
      prompt_id: turnEvent.prompt_id,
      execution_generation: turnEvent.execution_generation,
    };
    // The scope line says what "session" and "always" would approve: this exact command, here.
    const scope = turnEvent.scope === undefined ? '' : `\n\n${turnEvent.scope}`;
    const text = `Approval needed: ${turnEvent.reason}\n\n${turnEvent.command}${scope}`;
    const approval: PendingApproval = { ...prompt, text, shown: null };
    running.approval = approval;
    deps.events.emit('approval:asked', { session_key: sessionKey, prompt_id: turnEvent.prompt_id });
    const controls = adapter.approvals;
    const old = replacedMessage(shown, prompt.prompt_id, prompt.execution_generation);
    if (controls === undefined) {
      if (old !== null) replaceText(old, typedApprovalText({ text }));
      remember(prompt.prompt_id, post(typedApprovalText({ text })));
    } else {
      if (old !== null) {
        const before = { ...prompt, execution_generation: old.execution_generation ?? 1, text };
        void controls.settle(chatId, threadId, old.message_id!, before, 'replaced').catch(() => undefined);
      }
      // Buttons bound to this prompt; settled (disabled) once it is answered from anywhere.
      approval.shown = controls
        .ask(chatId, threadId, { ...prompt, text })
        .then((sent) => sent.message_id)
        .catch(() => null);
      remember(prompt.prompt_id, approval.shown);
    }
  } else if (turnEvent.type === 'approval.settled') {
    const approval = running.approval;
    if (approval?.prompt_id !== turnEvent.prompt_id) return;
    running.approval = null;
    const controls = adapter.approvals;
    if (controls === undefined || approval.shown === null) return;
    const result = approvalResultOf(turnEvent.outcome);
    void approval.shown
      .then((messageId) =>
        messageId === null ? undefined : controls.settle(chatId, threadId, messageId, approval, result),
      )
      .catch(() => undefined);
  } else if (turnEvent.type === 'tool.start') {
    void adapter
      .showToolCall?.(chatId, threadId, { name: turnEvent.name, arguments: turnEvent.arguments })
      .catch(() => undefined);
  } else if (turnEvent.type === 'clarify.request') {
    running.clarify = {
      prompt_id: turnEvent.prompt_id,
      execution_generation: turnEvent.execution_generation,
    };
    const choices = turnEvent.choices === null ? '' : `\n\nChoices: ${turnEvent.choices.join(', ')}`;
    const question = `${turnEvent.question}${choices}`;
    const old = replacedMessage(shown, turnEvent.prompt_id, turnEvent.execution_generation);
    if (old !== null) replaceText(old, question);
    remember(turnEvent.prompt_id, post(`${question}\n\n(Your next message answers this.)`));
  } else if (turnEvent.type === 'clarify.settled') {
    if (running.clarify?.prompt_id === turnEvent.prompt_id) running.clarify = null;
  }
}
