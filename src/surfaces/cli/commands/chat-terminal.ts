/**
 * The chat on a terminal (readline in raw mode): single-key approvals, and the prompt in front of
 * a line typed while a turn runs. Piped input needs neither: lines are used as they come.
 *
 * The prompt is in one of three states: `shown` (readline shows `> ` and whatever was typed: the
 * chat waits for a line, or the user began one while a turn runs), `owed` (it should be shown, but
 * a streamed line is being written: it comes back when that line ends, or at the next key) and
 * `busy` (a turn of ours is writing and nothing is typed; no prompt on screen). Output never lands
 * on the prompt line: whatever writes — our turn, a turn another client (the dashboard) runs on
 * this session while the chat waits, a spinner — the prompt line is erased first, the output written
 * above, and the prompt with the half-typed line drawn again below.
 */
import type { Interface, Key } from 'node:readline';
import type { ChatController } from '../chat/controller.js';
import { PROMPT } from '../chat/render.js';

type PromptState = 'shown' | 'owed' | 'busy';

// eslint-disable-next-line no-control-regex
const ANSI_SEQ = /\u001b\[[0-9;]*[A-Za-z]/g;

/** Erases the line the cursor is on and returns to its start. */
const ERASE_LINE = '\r\u001b[2K';

/** Asks the terminal to mark a paste (`ESC[200~` … `ESC[201~`), and to stop marking it. */
const BRACKETED_PASTE_ON = '\u001b[?2004h';
const BRACKETED_PASTE_OFF = '\u001b[?2004l';

export class TerminalKeys {
  private state: PromptState = 'busy';
  /** The last thing written did not end a line. */
  private midLine = false;
  /** Inside a bracketed paste: the text pasted so far (null outside one). */
  private pasted: string | null = null;

  constructor(
    private readonly rl: Interface,
    private readonly chat: ChatController,
    private readonly out: NodeJS.WriteStream,
  ) {
    this.wrapKeypresses();
    if (rl.terminal) {
      out.write(BRACKETED_PASTE_ON);
      rl.once('close', () => out.write(BRACKETED_PASTE_OFF));
    }
  }

  /** The chat waits for a line: show the prompt (and what was typed meanwhile). */
  idle(): void {
    // Output is mid-line (a turn another client runs): the prompt comes when that line ends.
    if (this.state !== 'shown' && this.midLine) {
      this.state = 'owed';
      return;
    }
    this.rl.prompt(true);
    this.state = 'shown';
  }

  /** Enter: the line is the chat's now; until it asks again, no prompt is on screen. */
  lineDone(): void {
    this.state = 'busy';
    this.midLine = false;
  }

  write(text: string): void {
    if (text === '') return;
    if (this.state === 'shown') {
      this.out.write(ERASE_LINE); // the prompt line goes; drawn again below
      this.state = 'owed';
    }
    this.out.write(text);
    // A line erased back to its start (a spinner's last frame) is as good as a finished one.
    const shown = text.replace(ANSI_SEQ, '');
    this.midLine = !(shown.endsWith('\n') || shown.endsWith('\r'));
    if (this.state === 'owed' && !this.midLine) this.showPrompt();
  }

  private showPrompt(): void {
    if (this.midLine) this.out.write('\n');
    this.rl.setPrompt(PROMPT);
    this.rl.prompt(true);
    this.midLine = true;
    this.state = 'shown';
  }

  /**
   * readline's own keypress listener is wrapped. While an approval is open and nothing is typed
   * yet, a key that answers it (as its question shows: `[o]nce … [d]eny`) goes to the chat at once,
   * without Enter, and readline never sees it. The first key of a line typed while a turn runs
   * puts the prompt in front of it. Every key then goes to readline as before.
   */
  private wrapKeypresses(): void {
    const input = this.rl.terminal ? process.stdin : null;
    const readlineKeys = input?.listeners('keypress').at(-1) as
      ((text: string | undefined, key: Key | undefined) => void) | undefined;
    if (input == null || readlineKeys === undefined) return;
    input.off('keypress', readlineKeys);
    input.on('keypress', (text: string | undefined, key: Key | undefined) => {
      if (this.paste(text, key)) return;
      const plain = key?.ctrl !== true && key?.meta !== true;
      const keys = plain && this.rl.line === '' ? this.chat.singleKeys() : null;
      const pressed = text?.toLowerCase();
      if (keys !== null && pressed !== undefined && keys.includes(pressed)) {
        this.out.write(`${text}\n`);
        this.midLine = false;
        this.chat.input(pressed);
        return;
      }
      const printable = plain && text !== undefined && text >= ' ' && key?.name !== 'return';
      if (printable && this.state !== 'shown' && !this.chat.asking()) this.showPrompt();
      readlineKeys.call(input, text, key);
    });
  }

  /**
   * A bracketed paste is taken whole: its lines are one message, sent when the paste ends (with
   * what was typed before it in front). A paste without a line break is typed into the line as
   * usual. True when the key belonged to a paste.
   */
  private paste(text: string | undefined, key: Key | undefined): boolean {
    if (key?.name === 'paste-start') {
      this.pasted = '';
      return true;
    }
    if (this.pasted === null) return false;
    if (key?.name !== 'paste-end') {
      // A line break arrives as `return` (\r), `enter` (\n) or both, as the pasted text had it.
      this.pasted += key?.name === 'return' ? '\r' : key?.name === 'enter' ? '\n' : (text ?? '');
      return true;
    }
    const pasted = this.pasted.replace(/\r\n?/g, '\n');
    this.pasted = null;
    if (!pasted.replace(/\n+$/, '').includes('\n')) {
      this.rl.write(pasted.replace(/\n+$/, ''));
      return true;
    }
    if (this.state !== 'shown' && !this.chat.asking()) this.showPrompt();
    const message = `${this.rl.line}${pasted}`.replace(/\n+$/, '');
    this.rl.write(null, { ctrl: true, name: 'e' });
    this.rl.write(null, { ctrl: true, name: 'u' });
    this.out.write(`${message}\n`);
    this.lineDone();
    this.chat.input(message);
    return true;
  }
}
