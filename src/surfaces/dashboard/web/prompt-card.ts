/** An open approval or question, answered inline: the redacted command and reason with once /
 * session / always / deny, or a question with its choices, a typed answer or Skip. */
import { h } from './dom.js';
import type { Prompt } from './wire.js';

export function promptCard(p: Prompt, answer: (value: string | string[]) => void): HTMLElement {
  if (p.type === 'approval.request') {
    return h(
      'div',
      { class: 'prompt approval', attrs: { 'data-prompt': p.prompt_id } },
      h('strong', { text: 'Approval needed' }),
      h('pre', { class: 'command', text: p.command ?? '' }),
      h('p', { class: 'reason', text: p.reason ?? '' }),
      ...(p.scope ? [h('p', { class: 'scope muted', text: p.scope })] : []),
      h(
        'div',
        { class: 'choices' },
        ...(p.choices ?? ['once', 'session', 'always', 'deny']).map((choice) =>
          h('button', {
            type: 'button',
            class: choice === 'deny' ? 'danger' : '',
            text:
              choice === 'once'
                ? 'Allow once'
                : choice === 'session'
                  ? 'Allow for session'
                  : choice === 'always'
                    ? 'Always allow'
                    : 'Deny',
            attrs: { 'data-choice': choice },
            on: { click: () => answer(choice) },
          }),
        ),
      ),
    );
  }
  const field = h('input', { type: 'text', attrs: { 'aria-label': 'Answer', placeholder: 'Your answer' } });
  return h(
    'form',
    {
      class: 'prompt clarify',
      attrs: { 'data-prompt': p.prompt_id },
      on: {
        submit: (e) => {
          e.preventDefault();
          answer(field.value);
        },
      },
    },
    h('strong', { text: 'Question' }),
    h('p', { text: p.question ?? '' }),
    p.choices && p.choices.length > 0
      ? h(
          'div',
          { class: 'choices' },
          ...p.choices.map((c) => h('button', { type: 'button', text: c, on: { click: () => answer(c) } })),
        )
      : null,
    h(
      'div',
      { class: 'row' },
      field,
      h('button', { type: 'submit', text: 'Answer' }),
      h('button', { type: 'button', class: 'link', text: 'Skip', on: { click: () => answer('') } }),
    ),
  );
}
