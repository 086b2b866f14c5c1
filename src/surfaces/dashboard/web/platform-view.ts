/**
 * A chat-platform session (Telegram…) as an operator sees it: its transcript and the open approval
 * or question of its running turn, answered inline. Such a session runs in the messaging gateway
 * and publishes no live events, so the page reads it again every few seconds while it is shown;
 * its input comes from its chat, so there is no composer (docs/decisions.md).
 */
import { append, clear, h } from './dom.js';
import { RpcError, type Link } from './link.js';
import { promptCard } from './prompt-card.js';
import { messageElement } from './session-view.js';
import type { Message, Prompt } from './wire.js';

/** How often an open platform session is read again. */
const POLL_MS = 2000;

interface Page {
  messages: Message[];
  has_more: boolean;
  prompts?: Prompt[];
}

function errorText(error: unknown): string {
  if (error instanceof RpcError) return `${error.message} (${error.reason})`;
  return error instanceof Error ? error.message : String(error);
}

export function platformSessionPage(link: Link, sessionId: string): HTMLElement {
  const transcript = h('div', { class: 'transcript' });
  const prompts = h('div', { class: 'prompts' });
  const notice = h('p', { class: 'notice', attrs: { role: 'status' } });
  const error = h('p', { class: 'error', attrs: { role: 'alert' } });
  const page = h(
    'section',
    { class: 'session platform-session' },
    h(
      'div',
      { class: 'session-head' },
      h('h1', { text: sessionId }),
      h('p', { class: 'meta', text: 'chat-platform session · its input comes from its chat' }),
    ),
    transcript,
    prompts,
    notice,
    error,
  );
  let shown = '';

  const draw = (read: Page) => {
    // Redrawn only when something changed, so an answer being typed is not wiped.
    const key = JSON.stringify([read.messages.at(-1)?.id, read.messages.length, read.prompts]);
    if (key === shown) return;
    shown = key;
    clear(transcript);
    const outputs = new Map<string, Message>();
    for (const m of read.messages) if (m.role === 'tool' && m.tool_call_id) outputs.set(m.tool_call_id, m);
    for (const m of read.messages) append(transcript, messageElement(m, outputs));
    clear(prompts);
    for (const p of read.prompts ?? [])
      append(
        prompts,
        promptCard(p, (value) => answer(p, value)),
      );
  };

  const read = async () => {
    try {
      draw(await link.call<Page>('session.messages', { session_id: sessionId, limit: 200 }));
      error.textContent = '';
    } catch (err) {
      error.textContent = errorText(err);
    }
  };

  const answer = (p: Prompt, value: string | string[]) => {
    const approval = p.type === 'approval.request';
    notice.textContent = '';
    link
      .call<{ status: string }>(approval ? 'approval.respond' : 'clarify.respond', {
        session_id: sessionId,
        execution_generation: p.execution_generation,
        prompt_id: p.prompt_id,
        [approval ? 'choice' : 'answer']: value,
      })
      .then(
        (result) => {
          if (result.status === 'already_resolved')
            notice.textContent = 'That prompt was already answered elsewhere.';
          return read();
        },
        (err: unknown) => (error.textContent = errorText(err)),
      );
  };

  const poll = () =>
    void read().finally(() => {
      // Stops once the page is no longer shown (navigation replaces it).
      if (page.isConnected) setTimeout(poll, POLL_MS);
    });
  poll();
  return page;
}
