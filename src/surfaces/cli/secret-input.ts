/** Reading a secret from the terminal without echo, or a line from piped stdin. */
import { DaemonError } from '../../daemon/errors.js';

/** One line typed at a TTY, not echoed. Ctrl-C aborts. */
export function readSecret(prompt: string): Promise<string> {
  const input = process.stdin;
  process.stderr.write(prompt);
  input.setRawMode(true);
  input.resume();
  input.setEncoding('utf8');
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = (error?: DaemonError) => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
      process.stderr.write('\n');
      if (error) reject(error);
      else resolve(typed);
    };
    const onData = (chunk: string) => {
      for (const char of chunk) {
        if (char === '\r' || char === '\n' || char === '\u0004') return finish();
        if (char === '\u0003')
          return finish(new DaemonError('invalid_input', 'cancelled; nothing was changed'));
        if (char === '\u007f' || char === '\b') typed = typed.slice(0, -1);
        else typed += char;
      }
    };
    input.on('data', onData);
  });
}

/** The first line of piped stdin (the rest is ignored), without its line ending. */
export async function readStdinLine(): Promise<string> {
  let text = '';
  process.stdin.setEncoding('utf8');
  for await (const chunk of process.stdin) {
    text += chunk as string;
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}
