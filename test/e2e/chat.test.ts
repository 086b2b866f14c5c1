/**
 * `gatehouse chat` and `gatehouse sessions` as a user runs them: the real built CLI, the real
 * daemon it starts by itself in a temp home, piped lines and a real pseudo-terminal (util-linux
 * `script`, present on every machine of this kind), real SIGTERM to the daemon.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { CLI, exited, isOneLineError, requireBuild, runCli, spawnCli, tempHome } from './cli.js';

beforeAll(requireBuild);

/** Each case starts real daemons (twice, some) on a small shared machine. */
const E2E_TIMEOUT_MS = 120_000;

const homes: string[] = [];
afterEach(async () => {
  // Chat leaves its daemon running on purpose (sessions outlive clients): stop each one.
  await Promise.all(homes.splice(0).map((home) => runCli(home, ['stop'])));
});

function newHome(): string {
  const home = tempHome();
  homes.push(home);
  return home;
}

function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gh-chat-'));
  mkdirSync(join(dir, 'victim'));
  return dir;
}

// eslint-disable-next-line no-control-regex
const ANSI_SEQ = /\u001b\[[0-9;]*[A-Za-z]/g;

/** A running program whose output we can wait on (plain text, ANSI stripped). */
class Session {
  output = '';
  /** Everything as written, escapes and carriage returns included. */
  raw = '';
  private waiters: { text: string | RegExp; from: number; resolve(found: string): void }[] = [];
  readonly exit: Promise<number | null>;

  constructor(readonly child: ChildProcess) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => this.take(chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => this.take(chunk));
    this.exit = exited(child);
  }

  /** `text` after offset `from`: the text itself, or what the pattern matched; null while absent. */
  private find(text: string | RegExp, from: number): string | null {
    if (typeof text === 'string') return this.output.includes(text, from) ? text : null;
    return text.exec(this.output.slice(from))?.[0] ?? null;
  }

  private take(chunk: string): void {
    this.raw += chunk;
    this.output += chunk.replace(ANSI_SEQ, '').replace(/\r/g, ''); // a terminal ends lines with \r\n
    this.waiters = this.waiters.filter((w) => {
      const found = this.find(w.text, w.from);
      if (found === null) return true;
      w.resolve(found);
      return false;
    });
  }

  /** Resolves, with what was found, once `text` appears after offset `from` (default: anywhere). */
  waitFor(text: string | RegExp, from = 0): Promise<string> {
    const found = this.find(text, from);
    if (found !== null) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      this.waiters.push({ text, from, resolve });
      void this.exit.then(() =>
        setImmediate(() => {
          if (this.find(text, from) === null)
            reject(new Error(`exited before "${String(text)}":\n${this.output}`));
        }),
      );
    });
  }

  type(keys: string): void {
    this.child.stdin!.write(keys);
  }
}

/** `gatehouse <args>` on a pseudo-terminal: keys go in as a person types them. */
function onTerminal(home: string, args: string[]): Session {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-q', '-e', '-c', command, '/dev/null'], {
    env: { ...process.env, GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '', TERM: 'xterm' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Session(child);
}

function sessionIdIn(output: string): string {
  const match = /session (\d{8}_\d{6}_[0-9a-f]{8})/.exec(output);
  if (!match) throw new Error(`no session id in:\n${output}`);
  return match[1]!;
}

function gatewayUrl(home: string): string {
  return (JSON.parse(readFileSync(homeLayout(home).gatewayJson, 'utf8')) as { url: string }).url;
}

function daemonPid(home: string): number {
  return (JSON.parse(readFileSync(homeLayout(home).gatewayJson, 'utf8')) as { pid: number }).pid;
}

describe('UX-1 gatehouse chat with piped input', () => {
  it(
    'starts the daemon, answers, approves inline, stores the transcript; sessions lists and searches it',
    async () => {
      const home = newHome();
      const cwd = workDir();
      const run = await runCli(home, ['chat', '--cwd', cwd], {
        input: `hello gatehouse\nrun: rm -rf ${join(cwd, 'victim')}\no\n`,
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain('model: built-in demo model (scripted stand-in, no account needed)');
      expect(run.stdout).toContain('you said: hello gatehouse');
      expect(run.stdout).toContain(`Allow \`rm -rf ${join(cwd, 'victim')}\`?`);
      expect(run.stdout).toContain('approved (once)');
      expect(existsSync(join(cwd, 'victim'))).toBe(false);
      const id = sessionIdIn(run.stdout);
      expect(run.stdout).toContain(`gatehouse chat --resume ${id}`);

      const listed = await runCli(home, ['sessions', '--json']);
      expect(listed.code).toBe(0);
      const { sessions } = JSON.parse(listed.stdout) as { sessions: Record<string, unknown>[] };
      expect(sessions).toEqual([expect.objectContaining({ session_id: id, source: 'cli', state: 'idle' })]);
      // Issue 12 item 19: titled from its first message, server-side.
      expect(sessions[0]!.title).toBe('hello gatehouse');

      const found = await runCli(home, ['sessions', '--search', 'gatehouse', '--json']);
      const { hits } = JSON.parse(found.stdout) as { hits: { session_id: string; role: string }[] };
      expect(hits.map((h) => h.role)).toContain('user');
      expect(hits.every((h) => h.session_id === id)).toBe(true);
      // A worker-adoption caller is not an operator: the search shows it nothing of this session.
      const worker = await GatewayClient.connectLocal(
        gatewayUrl(home),
        homeLayout(home).controlSocket,
        'worker-adoption',
      );
      const foreign = await worker.call<{ hits: unknown[] }>('session.search', { query: 'gatehouse' });
      await worker.close();
      expect(foreign.hits).toEqual([]);
      const missing = await runCli(home, ['sessions', '--search', 'zebra']);
      expect(missing.stdout).toContain('No message matches "zebra"');

      // The transcript is stored: a resume shows it all, once.
      const resumed = await runCli(home, ['chat', '--resume', id], { input: '' });
      expect(resumed.code).toBe(0);
      expect(resumed.stdout.split('> hello gatehouse').length).toBe(2);
      expect(resumed.stdout).toContain('⚙ terminal rm -rf');
      expect(resumed.stdout).toContain('the tool `terminal` returned');

      // `/title` renames it; `gatehouse sessions` (session.list) shows the new title.
      const retitled = await runCli(home, ['chat', '--resume', id], { input: '/title Cleanup of victim\n' });
      expect(retitled.code).toBe(0);
      expect(retitled.stdout).toContain('(this session is now titled: Cleanup of victim)');
      expect(retitled.stdout).not.toContain('you said: /title');
      const table = await runCli(home, ['sessions']);
      expect(table.stdout).toMatch(new RegExp(`${id} .* Cleanup of victim`));
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'refuses bad options with one line (launch flags with --resume too) and exits cleanly on empty input',
    async () => {
      const home = newHome();
      const bad = await runCli(home, ['chat', '--cwd', '/no/such/dir']);
      expect(bad.code).toBe(1);
      expect(bad.stderr.trim()).toBe('gatehouse: --cwd /no/such/dir is not an existing directory');
      const limit = await runCli(home, ['sessions', '--limit', '0']);
      expect(limit.stderr.trim()).toMatch(/^gatehouse: --limit must be/);
      const empty = await runCli(home, ['chat', '--cwd', workDir()], { input: '' });
      expect(empty.code).toBe(0);
      expect(empty.stdout).toContain('Detached; the session stays alive');
      const unknown = await runCli(home, ['chat', '--resume', '20200101_000000_deadbeef'], { input: '' });
      expect(unknown.code).toBe(1);
      expect(isOneLineError(unknown.stderr)).toBe(true);
      expect(unknown.stderr).toContain('no session 20200101_000000_deadbeef');
      // Launch flags cannot change a session that already exists: refused, naming why.
      const session_id = sessionIdIn(empty.stdout);
      for (const flag of ['--checkpoints', '--accept-hooks']) {
        const refused = await runCli(home, ['chat', '--resume', session_id, flag], { input: '' });
        expect(refused.code).toBe(1);
        expect(refused.stdout).toBe('');
        expect(isOneLineError(refused.stderr)).toBe(true);
        expect(refused.stderr.trim()).toBe(
          'gatehouse: --cwd, --model, --checkpoints and --accept-hooks choose how a new session starts; a resumed session keeps its own',
        );
      }
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'issue 12 item 16: a deliberate stop sticks; the chat waits and comes back with the gateway or on /reconnect',
    async () => {
      const home = newHome();
      const chat = new Session(spawnCli(home, ['chat', '--cwd', workDir()]));
      await chat.waitFor('Ctrl-D detaches');
      chat.type('before the stop\n');
      await chat.waitFor('you said: before the stop');
      const firstPid = daemonPid(home);

      let mark = chat.output.length;
      expect((await runCli(home, ['stop'])).stdout).toContain(`Gatehouse stopped (pid ${firstPid})`);
      await chat.waitFor('(the gateway was stopped. This chat waits', mark);
      // The chat did not start it again behind the user's back.
      expect((await runCli(home, ['status'])).stdout).toContain('Gatehouse is not running');
      expect(chat.output.slice(mark)).not.toContain('reconnecting');

      // Started again by someone else: the chat notices and re-attaches to the same session.
      mark = chat.output.length;
      expect((await runCli(home, ['start'])).code).toBe(0);
      await chat.waitFor('(reconnected to the gateway', mark);
      chat.type('after the start\n');
      await chat.waitFor('you said: after the start', mark);

      // Stopped again, the user asks for it back.
      mark = chat.output.length;
      await runCli(home, ['stop']);
      await chat.waitFor('(the gateway was stopped', mark);
      chat.type('/reconnect\n');
      await chat.waitFor('(reconnected to the gateway', mark);
      chat.type('after reconnect\n');
      await chat.waitFor('you said: after reconnect', mark);
      chat.child.stdin!.end();
      expect(await chat.exit).toBe(0);
      // `/reconnect` is the chat's own word: it never reached the agent.
      expect(chat.output).not.toContain('you said: /reconnect');
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'survives a daemon crash while connected: starts it again by itself and answers in the same session',
    async () => {
      const home = newHome();
      const chat = new Session(spawnCli(home, ['chat', '--cwd', workDir()]));
      await chat.waitFor('Ctrl-D detaches');
      chat.type('before the restart\n');
      await chat.waitFor('you said: before the restart');
      const firstPid = daemonPid(home);
      process.kill(firstPid, 'SIGKILL');
      await chat.waitFor('(reconnected to the gateway');
      expect(daemonPid(home)).not.toBe(firstPid);
      const mark = chat.output.length;
      chat.type('after the restart\n');
      await chat.waitFor('you said: after the restart', mark);
      chat.child.stdin!.end();
      expect(await chat.exit).toBe(0);
      const id = sessionIdIn(chat.output);
      // Nothing completed was shown twice.
      expect(chat.output.split('you said: before the restart').length).toBe(2);
      const { sessions } = JSON.parse((await runCli(home, ['sessions', '--json'])).stdout) as {
        sessions: { session_id: string }[];
      };
      expect(sessions.map((s) => s.session_id)).toEqual([id]);
      const resumed = await runCli(home, ['chat', '--resume', id], { input: '' });
      expect(resumed.stdout).toContain('> before the restart');
      expect(resumed.stdout).toContain('> after the restart');
    },
    E2E_TIMEOUT_MS,
  );
});

describe('UX-1 issue 4 case 9: the chat driven as a person would, on a pseudo-terminal', () => {
  beforeAll(() => {
    try {
      execFileSync('script', ['--version'], { stdio: 'ignore' });
    } catch {
      throw new Error(
        'this test needs util-linux `script` (package bsdutils/util-linux) for a pseudo-terminal',
      );
    }
  });

  it(
    'chat, approve, interrupt with Ctrl-C, detach with Ctrl-D, restart the daemon, resume: the history is there',
    async () => {
      const home = newHome();
      const cwd = workDir();
      const tty = onTerminal(home, ['chat', '--cwd', cwd]);
      await tty.waitFor('Ctrl-D detaches');
      tty.type('hello from a terminal\r');
      await tty.waitFor('you said: hello from a terminal');
      tty.type(`run: rm -rf ${join(cwd, 'victim')}\r`);
      await tty.waitFor('[o]nce [s]ession [a]lways [d]eny');
      tty.type('o'); // issue 12 item 19: one key answers, no Enter
      // `terminal` is inline code in the answer: a terminal shows it rendered, not quoted.
      await tty.waitFor('the tool terminal returned');
      expect(existsSync(join(cwd, 'victim'))).toBe(false);

      let mark = tty.output.length;
      tty.type('run: sleep 60\r');
      await tty.waitFor('⚙ terminal sleep 60', mark);
      // Issue 12 item 19: a line typed while the turn runs is shown after the prompt.
      tty.type('queued line\r');
      await tty.waitFor('\n> queued line', mark);
      tty.type('\u0003'); // Ctrl-C
      await tty.waitFor('(turn interrupted)', mark);

      mark = tty.output.length;
      tty.type('\u0004'); // Ctrl-D
      await tty.waitFor('Detached; the session stays alive', mark);
      expect(await tty.exit).toBe(0);
      const id = sessionIdIn(tty.output);

      const stopped = await runCli(home, ['stop']);
      expect(stopped.stdout).toContain('Gatehouse stopped');

      const again = onTerminal(home, ['chat', '--resume', id]);
      await again.waitFor('Ctrl-D detaches');
      await again.waitFor('> hello from a terminal');
      await again.waitFor('Demo model (scripted stand-in): you said: hello from a terminal');
      await again.waitFor(`⚙ terminal rm -rf ${join(cwd, 'victim')}\n  approved (once)\n  ↳ exit code 0`);
      // Issue 12 item 19: the interruption is in the history too, and every user line has the prompt.
      await again.waitFor('> run: sleep 60\n⚙ terminal sleep 60\n  ✗ [interrupted before completion]');
      await again.waitFor('(turn interrupted)');
      again.type('\u0004');
      expect(await again.exit).toBe(0);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'issue 12 item 19: a running tool shows a live line (spinner, seconds, last output line), cleared by the result',
    async () => {
      const home = newHome();
      const tty = onTerminal(home, ['chat', '--cwd', workDir()]);
      await tty.waitFor('Ctrl-D detaches');
      const mark = tty.output.length;
      // Written out rather than a `for` loop: every part is on the allow-list, so it runs unasked.
      tty.type(
        'run: echo step 1; sleep 0.6; echo step 2; sleep 0.6; echo step 3; sleep 0.6; echo step 4; sleep 0.6; echo step 5\r',
      );
      await tty.waitFor('⚙ terminal echo step 1;', mark);
      // The live line while the command runs: the tool, whole seconds so far, the last line printed
      // (which step it shows at which second depends on the machine's load: any past the first)...
      const live = await tty.waitFor(/ terminal [1-9]\d*s · step [2-5]/, mark);
      // ...and it moves on as the command prints more.
      const step = Number(live.slice(-1));
      if (step < 5) await tty.waitFor(new RegExp(` terminal \\d+s · step [${step + 1}-5]`), mark);
      await tty.waitFor('↳ exit code 0', mark);
      // The live line was erased in place: the result follows the tool line's own line on screen.
      const raw = tty.raw.slice(tty.raw.indexOf('⚙ terminal echo step 1;'));
      /* eslint-disable no-control-regex */
      expect(raw).toMatch(/\r\u001b\[2K(\u001b\[2m)?[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] terminal \ds/);
      expect(raw).toMatch(/\r\u001b\[2K(\u001b\[[0-9;]*m)*\s+↳ exit code 0/);
      /* eslint-enable no-control-regex */
      tty.type('\u0004');
      expect(await tty.exit).toBe(0);
    },
    E2E_TIMEOUT_MS,
  );
});
