/**
 * The steer box (issue 28, docs/scheduling.md "Steering a running turn"): while a turn runs, the
 * session page offers a line that corrects it. It calls `session.steer`, the method the chat's
 * `/steer` calls; the steer is stored in the transcript where the model saw it, and arrives on the
 * page as a user message marked "steer" (message.stored with `steer_id`).
 */
import { h } from './dom.js';
import type { SessionState } from './session-state.js';

export interface SteerHost {
  state: SessionState;
  notice(text: string): void;
  fail(error: unknown): void;
}

export class SteerBox {
  private readonly input = h('input', {
    type: 'text',
    class: 'steer-input',
    attrs: {
      placeholder: 'Correct the running turn (before its next model call)',
      'aria-label': 'Steer the running turn',
    },
  });
  readonly root: HTMLFormElement;

  constructor(private readonly host: SteerHost) {
    this.root = h(
      'form',
      {
        class: 'steer row',
        hidden: true,
        on: {
          submit: (e) => {
            e.preventDefault();
            void this.send();
          },
        },
      },
      this.input,
      h('button', { type: 'submit', text: 'Steer' }),
    );
  }

  /** Shown only while a turn runs; what was typed stays if the turn ends before it is sent. */
  update(): void {
    this.root.hidden = this.host.state.running === null;
  }

  private async send(): Promise<void> {
    const text = this.input.value.trim();
    if (text === '') return;
    this.input.value = '';
    try {
      const applied = await this.host.state.steer(text);
      this.host.notice(
        applied
          ? 'Steer saved: the running turn gets it before its next model call; if it ends first, it is the next message.'
          : 'Steer saved: no turn is running, so it is sent as the next message.',
      );
    } catch (error) {
      this.input.value = text;
      this.host.fail(error);
    }
  }
}
