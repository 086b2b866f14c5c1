import { existsSync, readFileSync } from 'node:fs';
import { hashPassword, MIN_PASSWORD_LENGTH, passwordProblem } from '../../../domain/auth/password.js';
import { parseConfig } from '../../../daemon/config.js';
import { setConfigString } from '../../../daemon/config-edit.js';
import { DaemonError, oneLine } from '../../../daemon/errors.js';
import { gatewayState } from '../../../daemon/gateway-state.js';
import { DEFAULT_CONFIG_YAML, ensureHomeDirs, writeFileAtomic } from '../../../daemon/home.js';
import { readSecret, readStdinLine } from '../secret-input.js';
import { cliHome, say } from '../shared.js';

/** `gatehouse passwd`: the dashboard password from the terminal or stdin, stored as a hash. */
export async function passwd(): Promise<void> {
  const layout = cliHome();
  // Nothing is written before the password passes: a refusal leaves the home as it was.
  const text = existsSync(layout.configFile) ? readFileSync(layout.configFile, 'utf8') : DEFAULT_CONFIG_YAML;
  parseConfig(text, layout.configFile); // refuse to edit a file that is already invalid

  const password = process.stdin.isTTY ? await askTwice() : await readStdinLine();
  const problem = passwordProblem(password);
  if (problem) throw new DaemonError('invalid_input', `${problem}; nothing was changed`);
  const hash = await hashPassword(password);

  // Only the hash's bytes change: comments, spacing and order stay as the owner wrote them.
  const updated = setConfigString(text, 'dashboard', 'password_hash', hash);
  parseConfig(updated, layout.configFile);
  ensureHomeDirs(layout);
  writeFileAtomic(layout.configFile, updated, 0o600);

  say(`Dashboard password set (stored as a hash in ${layout.configFile}).`);
  if (gatewayState(layout).status === 'stopped') return;
  // The running gateway takes it at once, and every dashboard login made with the old one ends.
  const { reloadPassword } = await import('../../control/client.js');
  try {
    const reply = await reloadPassword(layout.controlSocket);
    say(
      `The running gateway uses it now; ${reply.logins_ended} dashboard login(s) ended and ${reply.connections_closed} dashboard connection(s) closed.`,
    );
  } catch (error) {
    say(
      `The running gateway could not be told (${oneLine(error)}): restart it with "gatehouse stop && gatehouse start".`,
    );
  }
}

async function askTwice(): Promise<string> {
  const first = await readSecret(`New dashboard password (at least ${MIN_PASSWORD_LENGTH} characters): `);
  const second = await readSecret('Repeat it: ');
  if (first !== second)
    throw new DaemonError('invalid_input', 'the two passwords differ: run "gatehouse passwd" again');
  return first;
}
