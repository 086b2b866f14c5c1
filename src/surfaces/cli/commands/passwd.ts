import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { parseDocument } from 'yaml';
import { hashPassword } from '../../../domain/auth/password.js';
import { parseConfig } from '../../../daemon/config.js';
import { DaemonError } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { initHome, writeFileAtomic } from '../../../daemon/home.js';
import { readSecret, readStdinLine } from '../secret-input.js';
import { cliHome, say } from '../shared.js';

export function registerPasswd(program: Command): void {
  program
    .command('passwd')
    .description('set the dashboard password (read from stdin; only its hash is stored)')
    .action(async () => {
      const layout = cliHome();
      initHome(layout);
      const text = readFileSync(layout.configFile, 'utf8');
      parseConfig(text, layout.configFile); // refuse to edit a file that is already invalid

      const password = process.stdin.isTTY ? await askTwice() : await readStdinLine();
      if (password.length === 0) {
        throw new DaemonError(
          'invalid_input',
          'the password is empty: type a password (or pipe one on stdin)',
        );
      }
      const hash = await hashPassword(password);

      // Edit the parsed document, not a re-serialised object, so comments and key order survive.
      const document = parseDocument(text);
      document.setIn(['dashboard', 'password_hash'], hash);
      const updated = document.toString();
      parseConfig(updated, layout.configFile);
      writeFileAtomic(layout.configFile, updated, 0o600);

      say(`Dashboard password set (stored as a hash in ${layout.configFile}).`);
      if (gatewayState(layout).status !== 'stopped') {
        say(
          'The running gateway still uses the old one: restart it with "gatehouse stop && gatehouse start".',
        );
      }
    });
}

async function askTwice(): Promise<string> {
  const first = await readSecret('New dashboard password: ');
  const second = await readSecret('Repeat it: ');
  if (first !== second)
    throw new DaemonError('invalid_input', 'the two passwords differ: run "gatehouse passwd" again');
  return first;
}
