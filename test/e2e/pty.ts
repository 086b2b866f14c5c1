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

  kill(): void {
    this.child.kill('SIGKILL');
  }
}
