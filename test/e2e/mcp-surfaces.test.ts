/**
 * Issue 27, MCP servers as toolsets, where people meet them: an MCP call approved from
 * `gatehouse chat` and from the dashboard in real Chromium, the environment a stdio server gets
 * (the tool allow-list plus its own `env`, never the daemon's secrets), a safe-mode session's server
 * inside its isolation, and the example of docs/integrations.md run exactly as written.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HAVE_CHROMIUM, loggedIn, openSession, useChromium } from './browser.js';
import { runCli } from './cli.js';
import { nextEvent, writeConfig } from './gateway-harness.js';
import {
  BIN,
  EVERYTHING,
  FILESYSTEM,
  pidsWith,
  toolResultOf,
  tracked,
  turnEvents,
  useMcpFixture,
} from './mcp-fixture.js';
import { createAttached, dashboardConfig, dashboardSession, tempDir } from './seed-fixture.js';
import { tempHome } from './cli.js';

const fx = useMcpFixture();
const chromium = useChromium();
const E2E_TIMEOUT_MS = 120_000;

function filesystemConfig(root: string): string {
  return [
    'mcp_servers:',
    '  fs:',
    `    command: ${process.execPath}`,
    `    args: [${FILESYSTEM}, ${root}, ${tracked()}]`,
  ].join('\n');
}

const homes: string[] = [];
afterEach(async () => {
  await Promise.all(homes.splice(0).map((home) => runCli(home, ['stop'])));
});

describe('approving an MCP call', () => {
  it(
    'from gatehouse chat: the call is shown in full, "o" approves it once, the file is written',
    async () => {
      const home = tempHome();
      homes.push(home);
      const root = tempDir();
      writeConfig(home, `${filesystemConfig(root)}\n`);
      const target = join(root, 'from-chat.txt');
      const run = await runCli(home, ['chat', '--cwd', root], {
        input: `call: fs__write_file {"path": "${target}", "content": "approved in chat"}\no\n`,
      });
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      expect(run.stdout).toContain(
        `Allow \`fs__write_file {"path":"${target}","content":"approved in chat"}\`?`,
      );
      expect(run.stdout).toContain('approved (once)');
      expect(readFileSync(target, 'utf8')).toBe('approved in chat');
    },
    E2E_TIMEOUT_MS,
  );

  it.skipIf(!HAVE_CHROMIUM)(
    'from the dashboard in Chromium: the card shows the MCP call, "Allow once" runs it',
    async () => {
      const root = tempDir();
      const extra = `${await dashboardConfig()}${filesystemConfig(root)}\n`;
      const { d, native, sessionId } = await dashboardSession(fx, { cwd: root }, extra);
      const { context, page } = await loggedIn(chromium.browser, d.url);
      await openSession(page, sessionId);
      const target = join(root, 'from-dashboard.txt');
      const done = nextEvent(native, 'turn.complete', (e) => e.session_id === sessionId, 60_000);
      await native.call('prompt.submit', {
        session_id: sessionId,
        submission_id: 'd1',
        text: `call: fs__write_file {"path": "${target}", "content": "approved in the dashboard"}`,
      });
      const card = page.locator('.prompt.approval');
      await card.waitFor({ timeout: 60_000 });
      expect(await card.textContent()).toContain('fs__write_file');
      expect(existsSync(target)).toBe(false);
      await card.getByRole('button', { name: 'Allow once' }).click();
      expect((await done).event['outcome']).toBe('completed');
      expect(readFileSync(target, 'utf8')).toBe('approved in the dashboard');
      await context.close();
    },
  );
});

describe('what a stdio server can reach', () => {
  it(
    'gets the tool allow-list and its own env, never the daemon secrets; in safe mode, its own HOME and network',
    async () => {
      const mark = tracked();
      const config = [
        'mcp_servers:',
        '  everything:',
        `    command: ${process.execPath}`,
        `    args: [${EVERYTHING}, stdio, ${mark}]`,
        '    env: {MCP_GREETING: hello-from-config}',
      ].join('\n');
      const d = await fx.daemon({ extraConfig: config, env: { MCP_DAEMON_SECRET: 'never-for-tools' } });
      const client = await d.connect();
      const plain = await createAttached(client, { cwd: tempDir() });
      const env = JSON.parse(
        toolResultOf(await turnEvents(client, plain, 'p1', 'call: everything__get-env')).content,
      ) as Record<string, string>;
      expect(env['MCP_GREETING']).toBe('hello-from-config');
      expect(env['PATH']).toBeTruthy();
      expect(env['MCP_DAEMON_SECRET']).toBeUndefined();
      expect(Object.keys(env).filter((k) => k.startsWith('GATEHOUSE_'))).toEqual([]);

      const safe = await createAttached(client, { cwd: tempDir(), safe_mode: true });
      const safeEnv = JSON.parse(
        toolResultOf(await turnEvents(client, safe, 's1', 'call: everything__get-env')).content,
      ) as Record<string, string>;
      expect(safeEnv['MCP_GREETING']).toBe('hello-from-config');
      expect(safeEnv['MCP_DAEMON_SECRET']).toBeUndefined();
      // Its own HOME and TMPDIR, in the gateway's run directory, as the safe-mode worker has.
      expect(safeEnv['HOME']).toContain(join(d.layout.runDir, 'workers'));
      expect(safeEnv['TMPDIR']).toBe(join(safeEnv['HOME']!, 'tmp'));
      // Two processes now: the shared one and the safe session's own, in a network namespace of its
      // own where the host allows one.
      const pids = pidsWith(mark);
      expect(pids).toHaveLength(2);
      if (spawnSync('unshare', ['--net', 'true']).status === 0) {
        const namespaces = new Set(pids.map((pid) => readlinkSync(`/proc/${pid}/ns/net`)));
        expect(namespaces.size).toBe(2);
      }
    },
    E2E_TIMEOUT_MS,
  );
});

describe('docs/integrations.md', () => {
  it(
    'the MCP example config works as documented',
    async () => {
      const doc = readFileSync(resolve(import.meta.dirname, '../../docs/integrations.md'), 'utf8');
      const example = /<!-- mcp-example -->\n```yaml\n([\s\S]*?)```/.exec(doc)?.[1];
      expect(example).toBeDefined();
      const root = tempDir();
      // The documented commands are what `npm install -g` puts on PATH; here node_modules/.bin.
      const d = await fx.daemon({
        extraConfig: example!.replaceAll('/home/me/notes', root),
        env: { PATH: `${BIN}:${process.env.PATH ?? ''}` },
      });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: root });
      const echo = await turnEvents(
        client,
        session,
        'x1',
        'call: everything__echo {"message": "as documented"}',
      );
      expect(toolResultOf(echo)).toMatchObject({ content: 'Echo: as documented', is_error: false });
      const list = await turnEvents(client, session, 'x2', `call: notes__list_directory {"path": "${root}"}`);
      expect(toolResultOf(list)).toMatchObject({ is_error: false, name: 'notes__list_directory' });
    },
    E2E_TIMEOUT_MS,
  );
});
