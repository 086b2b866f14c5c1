/**
 * The chat on a real pseudo-terminal (issue 31 items 9-11): it says when it starts the gateway, a
 * bracketed paste of several lines is one message, the multi-line mode, the commands /help lists
 * (/status, /sessions, /skill, /clear, /exit), `gatehouse chat --continue`, NO_COLOR, and what
 * `gatehouse stop` says while it waits. One gateway for the file: the first chat starts it.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { homeLayout } from '../../src/daemon/home.js';
import { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { requireBuild, runCli, tempHome } from './cli.js';
import { Pty } from './pty.js';
import { deferred, startFakeProvider, status, textAnswer } from '../unit/runtime/helpers.js';

beforeAll(requireBuild);
const home = tempHome();
const ptys: Pty[] = [];
afterAll(async () => {
  for (const p of ptys) p.kill();
  await runCli(home, ['stop']);
});

function chat(args: string[] = [], env: NodeJS.ProcessEnv = {}): Pty {
  const pty = new Pty(home, ['chat', ...args], env);
  ptys.push(pty);
  return pty;
}

async function withGateway<T>(use: (client: GatewayClient) => Promise<T>): Promise<T> {
  const layout = homeLayout(home);
  const { url } = JSON.parse(readFileSync(layout.gatewayJson, 'utf8')) as { url: string };
  const client = await GatewayClient.connectLocal(url, layout.controlSocket, 'interactive');
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

async function userMessages(id: string): Promise<(string | null)[]> {
  const snap = await withGateway((client) =>
    client.call<{ messages: { role: string; content: string | null }[] }>('session.resume', {
      session_id: id,
    }),
  );
  return snap.messages.filter((m) => m.role === 'user').map((m) => m.content);
}

describe('gatehouse chat on a terminal', { timeout: 120_000 }, () => {
  let sessionId = '';

  it('says once that it started the gateway, takes a paste and a multi-line message whole, and runs the commands /help lists', async () => {
    const skills = join(home, 'skills', 'haiku');
    mkdirSync(skills, { recursive: true });
    writeFileSync(
      join(skills, 'SKILL.md'),
      '---\nname: haiku\ndescription: answer in a haiku\n---\nAnswer in three lines of 5, 7 and 5 syllables.\n',
    );
    const pty = chat();
    const banner = await pty.waitFor(/new session (\d{8}_\d{6}_[0-9a-f]{8})/);
    sessionId = /new session (\d{8}_\d{6}_[0-9a-f]{8})/.exec(banner)![1]!;
    expect(pty.text.match(/started the gateway in the background/g)).toHaveLength(1);
    await pty.waitFor('> ');

    let from = pty.text.length;
    pty.type('/help\r');
    const help = await pty.waitFor('(multi-line mode)', from);
    for (const name of [
      '/exit',
      '/clear',
      '/model',
      '/status',
      '/cost',
      '/sessions',
      '/fork',
      '/skill',
      '/reconnect',
    ])
      expect(help).toMatch(new RegExp(`^  ${name}\\b`, 'm'));

    // A bracketed paste, as a terminal sends it: both lines are one message, sent at the paste's end.
    from = pty.text.length;
    pty.type('\u001b[200~first pasted line\r\nsecond pasted line\u001b[201~');
    await pty.waitFor('you said: first pasted line\nsecond pasted line', from);

    from = pty.text.length;
    pty.type('"""\r');
    await pty.waitFor('(multi-line: end the message with a line of """)', from);
    pty.type('one\rtwo\r"""\r');
    await pty.waitFor('you said: one\ntwo', from);

    from = pty.text.length;
    pty.type('/skill haiku\r');
    await pty.waitFor('(your next message is sent with the skill haiku from', from);
    pty.type('a poem please\r');
    await pty.waitFor('you said: Answer in three lines', from);

    from = pty.text.length;
    pty.type('/status\r');
    const status = await pty.waitFor(/spent: .*tokens\ncontext: .*to go/, from);
    expect(status).toContain(`session: ${sessionId}`);
    expect(status).toContain('state: idle');
    // The dashboard's meter in words: the same figures session.context gives.
    const context = await withGateway((client) =>
      client.call<{ tokens: number; window: number; compress_at: number; until_compression: number }>(
        'session.context',
        { session_id: sessionId },
      ),
    );
    expect(status).toContain(
      `context: ${context.tokens} of ${context.window} tokens (${Math.round((context.tokens / context.window) * 100)}%) · ` +
        `compression at ${context.compress_at} (75%): ${context.until_compression} tokens to go`,
    );

    from = pty.text.length;
    pty.type('/sessions\r');
    await pty.waitFor(`* ${sessionId}`, from);

    from = pty.raw.length;
    pty.type('/clear\r');
    await pty.waitFor(`(session ${sessionId})`, pty.text.length);
    expect(pty.raw.slice(from)).toContain('\u001b[2J');

    pty.type('/exit\r');
    expect(await pty.exited).toBe(0);
    expect(pty.text).toContain(`Resume it with: gatehouse chat --resume ${sessionId}`);

    expect(await userMessages(sessionId)).toEqual([
      'first pasted line\nsecond pasted line',
      'one\ntwo',
      expect.stringMatching(
        /^\[skill haiku: .*SKILL\.md\]\nAnswer in three lines of 5, 7 and 5 syllables\.\n\na poem please$/,
      ),
    ]);
  });

  it('keeps the prompt and a half-typed line intact while another client drives the session', async () => {
    const pty = chat(['--resume', sessionId]);
    await pty.waitFor('> ');
    pty.type('half typed');
    await pty.waitForScreen((screen) => screen.at(-1) === '> half typed');
    // Another client (as the dashboard does) runs a turn on the same session while the chat waits.
    await withGateway((client) =>
      client.call('prompt.submit', {
        session_id: sessionId,
        submission_id: 'elsewhere-1',
        text: 'from elsewhere',
      }),
    );
    const screen = await pty.waitForScreen(
      (rows) =>
        rows.includes(`Demo model (scripted stand-in): you said: from elsewhere`) &&
        rows.at(-1) === '> half typed',
    );
    // Its lines are above the prompt, each on its own; the prompt and what was typed are drawn again below.
    const end = screen.length - 1;
    expect(screen.slice(end - 2)).toEqual([
      '> from elsewhere',
      'Demo model (scripted stand-in): you said: from elsewhere',
      '> half typed',
    ]);
    expect(screen.filter((row) => row.includes('half typed'))).toEqual(['> half typed']);
    // The line typed meanwhile is still the user's to send.
    const from = pty.text.length;
    pty.type(' and sent\r');
    await pty.waitFor('you said: half typed and sent', from);
    pty.type('/exit\r');
    expect(await pty.exited).toBe(0);
  });

  it('renders Markdown answers on a terminal: headings, lists, framed code, inline code', async () => {
    const MESSAGE = 'intro\n# Title\n- item one\n```js\nlet x = 1;\n```\nuse `npm test` now';
    const pty = chat(['--resume', sessionId]);
    await pty.waitFor('> ');
    const from = pty.text.length;
    pty.type(`\u001b[200~${MESSAGE.replace(/\n/g, '\r\n')}\u001b[201~`);
    await pty.waitFor('use npm test now', from);
    const rendered = [
      'Demo model (scripted stand-in): you said: intro',
      'Title',
      '• item one',
      `┌─ js ${'─'.repeat(34)}`,
      '│ let x = 1;',
      `└${'─'.repeat(39)}`,
    ];
    const screen = await pty.waitForScreen((rows) => rows.at(-1) === '>');
    const at = screen.indexOf(rendered[0]!);
    expect(screen.slice(at, at + 7)).toEqual([...rendered, 'use npm test now']);
    expect(pty.raw).toContain('\u001b[1mTitle\u001b[22m');
    expect(pty.raw).toContain('\u001b[36mnpm test\u001b[39m');
    pty.type('/exit\r');
    expect(await pty.exited).toBe(0);

    // Without colours the structure stays and inline code keeps its backticks; stored answers too.
    const plain = chat(['--resume', sessionId], { NO_COLOR: '1' });
    const history = await plain.waitForScreen((rows) => rows.at(-1) === '>');
    const shown = history.lastIndexOf(rendered[0]!);
    expect(history.slice(shown, shown + 7)).toEqual([...rendered, 'use `npm test` now']);
    plain.type('/exit\r');
    expect(await plain.exited).toBe(0);

    // Piped, the answer is passed on as the model wrote it.
    const piped = await runCli(home, ['chat', '--resume', sessionId], { input: '/exit\n' });
    expect(piped.stdout).toContain(
      'you said: intro\n# Title\n- item one\n```js\nlet x = 1;\n```\nuse `npm test` now\n',
    );
  });

  it('--continue resumes the newest session; NO_COLOR leaves the colours out', async () => {
    const coloured = chat(['--continue']);
    await coloured.waitFor(`resumed session ${sessionId}`);
    await coloured.waitFor('> ');
    expect(coloured.raw).toContain('\u001b[2m'); // dim, on a terminal that wants colour
    expect(coloured.text).not.toContain('started the gateway'); // it was running already
    coloured.type('/exit\r');
    expect(await coloured.exited).toBe(0);

    const plain = chat(['--continue'], { NO_COLOR: '1' });
    await plain.waitFor(`resumed session ${sessionId}`);
    await plain.waitFor('> ');
    // eslint-disable-next-line no-control-regex
    expect(plain.raw).not.toMatch(/\u001b\[[0-9;]*m/);
    plain.type('/exit\r');
    expect(await plain.exited).toBe(0);

    // status, doctor and sessions: coloured on a terminal; not with NO_COLOR, nor through a pipe.
    // eslint-disable-next-line no-control-regex
    const SGR = /\u001b\[[0-9;]*m/;
    for (const command of ['status', 'doctor', 'sessions']) {
      const onTerminal = new Pty(home, [command]);
      ptys.push(onTerminal);
      await onTerminal.exited;
      expect(onTerminal.raw, command).toMatch(SGR);
      const noColour = new Pty(home, [command], { NO_COLOR: '1' });
      ptys.push(noColour);
      await noColour.exited;
      expect(noColour.raw, command).not.toMatch(SGR);
      // The same text either way (figures such as the uptime aside).
      const figures = (text: string) => text.replace(/\d+/g, 'N');
      expect(figures(noColour.text), command).toBe(figures(onTerminal.text));
      const piped = await runCli(home, [command]);
      expect(piped.stdout, command).not.toMatch(SGR);
    }
    const shown = new Pty(home, ['status']);
    ptys.push(shown);
    await shown.exited;
    expect(shown.raw).toContain('\u001b[32mGatehouse is running.\u001b[39m');

    // A project that declares hooks, opened without --accept-hooks, says so once, and how to accept.
    const project = join(home, '..', 'project');
    mkdirSync(join(project, '.gatehouse'), { recursive: true });
    writeFileSync(
      join(project, '.gatehouse', 'hooks.yaml'),
      'hooks:\n  turn_start:\n    - command: "true"\n',
    );
    // The banner names the instruction files the session loaded: the project's and the personal one.
    writeFileSync(join(project, 'AGENTS.md'), 'Answer briefly.\n');
    writeFileSync(join(home, 'AGENTS.md'), 'Call me Sam.\n');
    const untrusted = chat(['--cwd', project]);
    await untrusted.waitFor('> ');
    expect(untrusted.text).toContain(
      `\nrules: ${join(project, 'AGENTS.md')} · personal instructions: ${join(home, 'AGENTS.md')}\n`,
    );
    expect(
      untrusted.text.match(
        /this project declares hooks in .*hooks\.yaml, and this session does not run them; to run them, start the chat with: gatehouse chat --accept-hooks/g,
      ),
    ).toHaveLength(1);
    untrusted.type('/exit\r');
    expect(await untrusted.exited).toBe(0);
    const trusted = await runCli(home, ['chat', '--cwd', project, '--accept-hooks'], { input: '/exit\n' });
    expect(trusted.code).toBe(0);
    expect(trusted.stderr).not.toContain('declares hooks');
    rmSync(join(home, 'AGENTS.md'));
    const bare = await runCli(home, ['chat', '--cwd', mkdtempSync(join(tmpdir(), 'gh-bare-'))], {
      input: '/exit\n',
    });
    expect(bare.stdout).toContain('\nrules: none · personal instructions: none\n');

    const both = await runCli(home, ['chat', '--continue', '--resume', sessionId]);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('give one of them');
  });

  it('gatehouse stop says what it waits for, and for how long', async () => {
    const stop = new Pty(home, ['stop']);
    ptys.push(stop);
    expect(await stop.exited).toBe(0);
    expect(stop.text).toMatch(
      /Stopping the gateway \(pid \d+\): running turns may finish first, for up to 30s \(drain_timeout_s\), then it exits\.\n(?: {2}waiting for pid \d+ to exit: \d+s)*Gatehouse stopped \(pid \d+\) after \d+\.\ds\./,
    );
    const empty = tempHome();
    const none = await runCli(empty, ['chat', '--continue']);
    await runCli(empty, ['stop']);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toBe(
      'gatehouse: there is no session to continue yet: start one with "gatehouse chat"\n',
    );
  });
});

describe('gatehouse chat on a terminal, waiting for a provider that is retried', { timeout: 120_000 }, () => {
  const own = tempHome();
  afterAll(async () => {
    await runCli(own, ['stop']);
  });

  it('shows the time waited from the turn start to the first token, with the retry count', async () => {
    const release = deferred();
    const provider = await startFakeProvider([
      status(500, { error: { message: 'the provider is overloaded' } }),
      (req, res, body) => void release.promise.then(() => textAnswer('finally an answer')(req, res, body)),
    ]);
    try {
      mkdirSync(own, { recursive: true });
      writeFileSync(join(own, 'config.yaml'), `model:\n  base_url: ${provider.baseUrl}\n  model: m\n`, {
        mode: 0o600,
      });
      const pty = new Pty(own, ['chat']);
      ptys.push(pty);
      await pty.waitFor('> ');
      const from = pty.text.length;
      pty.type('hello\r');
      // The spinner line, redrawn in place: the time so far and the provider's retry.
      await pty.waitFor(/waiting for the model \d+s · retry 1: HTTP 500/, from);
      release.resolve();
      await pty.waitFor('finally an answer', from);
      pty.type('/exit\r');
      expect(await pty.exited).toBe(0);
    } finally {
      release.resolve();
      await provider.close();
    }
  });
});
