/**
 * `gatehouse chat`: a terminal chat on one gateway session (SPEC UX-1). This file is the terminal
 * side only — options, readline, keys and signals; the session logic lives in ../chat/.
 */
import { existsSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { DaemonError } from '../../../daemon/errors.js';
import { RpcCallError } from '../../client/rpc-client.js';
import { ControlRequestError } from '../../control/client.js';
import { ChatController } from '../chat/controller.js';
import { ANSI, PLAIN, PROMPT } from '../chat/render.js';
import { ANSI_MARKDOWN, PLAIN_MARKDOWN } from '../chat/markdown.js';
import { TerminalKeys } from './chat-terminal.js';
import { PROJECT_HOOKS_FILE } from '../../../runtime/hooks/config.js';
import { cliHome, note } from '../shared.js';
import { wantsColour } from '../colour.js';
import { loadCliConfig } from '../load-config.js';

export interface ChatFlags {
  resume?: string;
  continue?: boolean;
  cwd?: string;
  model?: string;
  source: 'cli' | 'tui';
  checkpoints?: boolean;
  acceptHooks?: boolean;
}

/** `gatehouse chat`: the exit code is the chat's own. */
export async function chat(flags: ChatFlags): Promise<void> {
  process.exitCode = await runChat(flags);
}

async function runChat(flags: ChatFlags): Promise<number> {
  const layout = cliHome();
  loadCliConfig(layout); // a bad config is reported here, before any daemon is started
  const launch = {
    ...(flags.checkpoints ? { checkpoints: true } : {}),
    ...(flags.acceptHooks ? { accept_hooks: true } : {}),
  };
  const fresh = flags.cwd !== undefined || flags.model !== undefined || Object.keys(launch).length > 0;
  if (flags.continue && flags.resume !== undefined) {
    throw new DaemonError(
      'invalid_input',
      '--continue resumes the newest session and --resume a named one: give one of them',
    );
  }
  if (flags.continue && fresh) {
    throw new DaemonError(
      'invalid_input',
      '--cwd, --model, --checkpoints and --accept-hooks choose how a new session starts; a continued session keeps its own',
    );
  }
  if (flags.resume !== undefined && fresh) {
    throw new DaemonError(
      'invalid_input',
      '--cwd, --model, --checkpoints and --accept-hooks choose how a new session starts; a resumed session keeps its own',
    );
  }
  const cwd = resolve(flags.cwd ?? process.cwd());
  if (flags.resume === undefined && (!existsSync(cwd) || !statSync(cwd).isDirectory())) {
    throw new DaemonError('invalid_input', `--cwd ${cwd} is not an existing directory`);
  }
  const newSession = flags.resume === undefined && !flags.continue;
  if (newSession && !flags.acceptHooks && existsSync(join(cwd, PROJECT_HOOKS_FILE))) {
    // Trust is the user's to give: the hooks are not run, and they hear once how to run them.
    note(
      `this project declares hooks in ${join(cwd, PROJECT_HOOKS_FILE)}, and this session does not run them; to run them, start the chat with: gatehouse chat --accept-hooks`,
    );
  }
  const tty = process.stdin.isTTY === true;
  const color = wantsColour(process.stdout);
  const screen = process.stdout.isTTY === true;
  const rl = createInterface({
    input: process.stdin,
    ...(tty ? { output: process.stdout, terminal: true } : { terminal: false }),
  });
  rl.setPrompt(PROMPT);
  const chat = new ChatController({
    layout,
    ...(flags.resume !== undefined ? { resume: flags.resume } : {}),
    ...(flags.continue ? { continueNewest: true } : {}),
    create: {
      cwd,
      source: flags.source,
      ...(flags.model !== undefined ? { model: flags.model } : {}),
      launch,
    },
    tty,
    // On a terminal answers are rendered as Markdown; piped, they are passed on as the model wrote them.
    style: screen
      ? { ...(color ? ANSI : PLAIN), markdown: color ? ANSI_MARKDOWN : PLAIN_MARKDOWN }
      : color
        ? ANSI
        : PLAIN,
    write: (text) => (keys ? keys.write(text) : process.stdout.write(text)),
    warn: (line) => process.stderr.write(`${line}\n`),
    idle: () => keys?.idle(),
  });
  const keys = tty ? new TerminalKeys(rl, chat, process.stdout) : null;
  rl.on('line', (line) => {
    keys?.lineDone();
    chat.input(line);
  });
  rl.on('close', () => chat.endOfInput());
  const onSigint = () => chat.interrupt();
  if (tty) rl.on('SIGINT', onSigint);
  else process.on('SIGINT', onSigint);
  try {
    await chat.start().catch((error: unknown) => {
      // A refusal from the gateway (say, no such session to resume) is the user's answer, not a crash.
      if (error instanceof RpcCallError || error instanceof ControlRequestError) {
        throw new DaemonError('not_available', error.message);
      }
      throw error;
    });
    return await chat.done;
  } finally {
    process.off('SIGINT', onSigint);
    rl.close();
    process.stdin.destroy();
  }
}
