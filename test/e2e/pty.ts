/**
 * The built `gatehouse` command on a real pseudo-terminal: util-linux `script` gives it a pty (so
 * stdin and stdout are TTYs, readline runs in raw mode, the terminal's key sequences arrive as a
 * person's would); what it draws comes back on the pipe, read here with its escape codes and
 * without them. Waits are on the output, never on time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { CLI } from './cli.js';

// eslint-disable-next-line no-control-regex
const ESCAPES = /\u001b\[[0-9;?]*[A-Za-z~]|\r/g;

const quote = (word: string): string => `'${word.replace(/'/g, `'\\''`)}'`;

// eslint-disable-next-line no-control-regex
const TOKENS = /\u001b\[([?0-9;]*)([A-Za-z~])|\u001b[=>]|[\s\S]/gu;

/**
 * The screen a terminal `columns` wide shows for `raw`, scrollback included, one string a row: the
 * small part of VT100 that readline and the chat send (erase in line and display, cursor moves,
 * colours ignored). So a test sees what a person sees — a prompt erased and drawn again below the
 * output, not the bytes that did it.
 */
export function screenOf(raw: string, columns = 120): string[] {
  const rows: string[][] = [[]];
  let row = 0;
  let col = 0;
  const at = (r: number): string[] => {
    while (rows.length <= r) rows.push([]);
    return rows[r]!;
  };
  for (const [token, params, final] of raw.matchAll(TOKENS)) {
    if (final !== undefined) {
      const n = Number(params!.split(';')[0] || (final === 'K' || final === 'J' ? 0 : 1));
      switch (final) {
        case 'K': {
          const line = at(row);
          if (n === 0) line.length = Math.min(line.length, col);
          else if (n === 1) for (let i = 0; i <= col && i < line.length; i++) line[i] = ' ';
          else line.length = 0;
          break;
        }
        case 'J':
          if (n === 0) {
            at(row).length = Math.min(at(row).length, col);
            rows.length = row + 1;
          } else if (n >= 2) {
            rows.length = 0;
            rows.push([]);
            row = 0;
            col = 0;
          }
          break;
        case 'G':
          col = n - 1;
          break;
        case 'C':
          col += n;
          break;
        case 'D':
          col = Math.max(0, col - n);
          break;
        case 'A':
          row = Math.max(0, row - n);
          break;
        case 'B':
          row += n;
          break;
        case 'H':
          col = 0; // only ever "home" after a clear here
          break;
      }
      continue;
    }
    if (token === '\r') col = 0;
    else if (token === '\n') row += 1;
    else if (token >= ' ' && !token.startsWith('\u001b')) {
      if (col >= columns) {
        row += 1;
        col = 0;
      }
      const line = at(row);
      while (line.length < col) line.push(' ');
      line[col] = token;
      col += 1;
    }
  }
  at(row);
  return rows.map((r) => r.join('').trimEnd());
}

export class Pty {
  /** Everything the program drew, escape codes included. */
  raw = '';
  private readonly child: ChildProcess;
  private readonly waiters = new Set<() => void>();
  readonly exited: Promise<number | null>;

  constructor(home: string, args: string[], env: NodeJS.ProcessEnv = {}) {
    const command = [process.execPath, CLI, ...args].map(quote).join(' ');
    this.child = spawn('script', ['-qfec', `stty cols 120 rows 40; exec ${command}`, '/dev/null'], {
      env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '', TERM: 'xterm-256color', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      this.raw += chunk;
      for (const wake of [...this.waiters]) wake();
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code) => resolve(code)));
  }

  /** What the program drew, as text: escape codes and carriage returns taken out. */
  get text(): string {
    return this.raw.replace(ESCAPES, '');
  }

  /** Keys as the terminal sends them (`\r` is Enter). */
  type(keys: string): void {
    this.child.stdin!.write(keys);
  }

  /** Resolves once the text drawn after `from` (a length of `text`) contains `what`. */
  waitFor(what: string | RegExp, from = 0): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const seen = this.text.slice(from);
        if (typeof what === 'string' ? seen.includes(what) : what.test(seen)) {
          this.waiters.delete(check);
          resolve(seen);
        }
      };
      this.waiters.add(check);
      void this.exited.then(() => {
        if (this.waiters.has(check)) {
          this.waiters.delete(check);
          reject(new Error(`exited before ${String(what)} was drawn; it drew:\n${this.text.slice(from)}`));
        }
      });
      check();
    });
  }

  /** The screen as the terminal (120 columns) shows it now (screenOf). */
  get screen(): string[] {
    return screenOf(this.raw);
  }

  /** Resolves with the screen once `ready` holds for it. */
  waitForScreen(ready: (screen: string[]) => boolean): Promise<string[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const screen = this.screen;
        if (ready(screen)) {
          this.waiters.delete(check);
          resolve(screen);
        }
      };
      this.waiters.add(check);
      void this.exited.then(() => {
        if (this.waiters.has(check)) {
          this.waiters.delete(check);
          reject(new Error(`exited before the screen was ready; it showed:\n${this.screen.join('\n')}`));
        }
      });
      check();
    });
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}
