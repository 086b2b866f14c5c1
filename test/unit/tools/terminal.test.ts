import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PromptBroker } from '../../../src/runtime/approvals/broker.js';
import { toolEnvironment } from '../../../src/runtime/tools/env.js';
import { createTerminalTool, terminalTool } from '../../../src/runtime/tools/terminal.js';
import { harness, isAlive, readPids, tempDir } from './harness.js';

const fast = createTerminalTool({ killGraceMs: 300 });

function setup() {
  const cwd = tempDir();
  // These tests are about running commands, not approving them (test/unit/approvals/).
  return { cwd, ...harness(new PromptBroker(), { cwd, yolo: true }) };
}

describe('RUN-2 terminal tool', () => {
  it('runs bash in the session cwd and reports the exit code', async () => {
    const { cwd, context } = setup();
    const ok = await terminalTool.run({ command: 'pwd; echo to-stderr >&2' }, context);
    expect(ok.isError).toBe(false);
    expect(ok.content).toContain('exit code 0');
    expect(ok.content).toContain(cwd);
    expect(ok.content).toContain('to-stderr');

    const failed = await terminalTool.run({ command: 'echo partial; exit 3' }, context);
    expect(failed.isError).toBe(true);
    expect(failed.content).toMatch(/^exit code 3/);
    expect(failed.content).toContain('partial');
  });

  it('says so when there is no output, and refuses bad arguments without running anything', async () => {
    const { context } = setup();
    expect((await terminalTool.run({ command: 'true' }, context)).content).toContain('(no output)');
    expect(await terminalTool.run({}, context)).toMatchObject({ isError: true });
    expect(await terminalTool.run({ command: '   ' }, context)).toMatchObject({ isError: true });
    const bad = await terminalTool.run({ command: 'echo x', timeout_s: 'soon' }, context);
    expect(bad).toMatchObject({ isError: true });
    expect(bad.content).toContain('timeout_s');
  });

  it('caps the output, keeping head and tail, with a marker counting the dropped bytes', async () => {
    const { context } = setup();
    const tool = createTerminalTool({ outputCapBytes: 1000 });
    const result = await tool.run(
      { command: "printf 'HEAD'; head -c 5000 /dev/zero | tr '\\0' x; printf 'TAIL'" },
      context,
    );
    expect(result.content).toContain('[... output truncated: 4008 bytes dropped ...]');
    expect(result.content).toContain('HEAD');
    expect(result.content).toContain('TAIL');
  });

  it('keeps a capped ASCII output ASCII, so V8 stores it one byte per character', async () => {
    const { context } = setup();
    const tool = createTerminalTool({ outputCapBytes: 1000 });
    const result = await tool.run({ command: "head -c 5000 /dev/zero | tr '\\0' x" }, context);
    expect(result.content).toContain('output truncated');
    // eslint-disable-next-line no-control-regex
    expect(result.content).toMatch(/^[\x00-\x7f]*$/);
  });

  it('kills the whole process group on timeout', async () => {
    const { cwd, context } = setup();
    const command = 'sleep 1000 & echo $! > pids; sleep 1000 & echo $! >> pids; echo $$ >> pids; wait';
    const result = await fast.run({ command, timeout_s: 0.5 }, context);
    expect(result.isError).toBe(true);
    expect(result.content).toContain('timed out after 0.5 s');
    const pids = readPids(path.join(cwd, 'pids'));
    expect(pids).toHaveLength(3);
    for (const pid of pids) expect(isAlive(pid)).toBe(false);
  });

  it('kills the whole process group when the turn is interrupted', async () => {
    const { cwd, context, controller } = setup();
    const fifo = path.join(cwd, 'ready');
    execFileSync('mkfifo', [fifo]);
    const command = 'sleep 1000 & echo $! > pids; sleep 1000 & echo $! >> pids; echo go > ready; wait';
    const running = fast.run({ command }, context);
    // Opening the fifo blocks until the command has written both pids.
    expect((await fs.promises.readFile(fifo, 'utf8')).trim()).toBe('go');
    controller.abort();
    const result = await running;
    expect(result.isError).toBe(true);
    // Issue 12 item 19: one clear sentence, not "… did not finish. interrupted; … (no output)".
    expect(result.content).toBe(
      '[interrupted before completion] The user interrupted the turn; the command was stopped, with everything it started, before it printed anything.',
    );
    for (const pid of readPids(path.join(cwd, 'pids'))) expect(isAlive(pid)).toBe(false);
  });

  it('stops background processes left running when the command ends', async () => {
    const { cwd, context } = setup();
    const result = await fast.run(
      { command: 'sleep 1000 > /dev/null 2>&1 & echo $! > pid; echo started' },
      context,
    );
    expect(result.content).toContain('exit code 0');
    expect(result.content).toContain('background processes');
    expect(isAlive(readPids(path.join(cwd, 'pid'))[0] ?? 0)).toBe(false);
  });

  describe('environment allow-list', () => {
    const planted = {
      OPENAI_API_KEY: 'sk-planted-openai-0123456789',
      GATEHOUSE_TEST_SECRET: 'planted-gatehouse-secret',
      MYSQL_PWD: 'planted-mysql-pwd',
      SMTP_PASS: 'planted-smtp-pass',
      PG_URL: 'postgres://u:planted-pg@h/db',
      HTTPS_PROXY: 'http://u:planted-proxy@h:3128',
      MY_PROVIDER_CRED: 'planted-unusual-name',
    };
    afterEach(() => {
      for (const name of Object.keys(planted)) delete process.env[name];
    });

    it('passes only the allow-listed names to the command, whatever the others are called', async () => {
      Object.assign(process.env, planted);
      const { context } = setup();
      const result = await terminalTool.run({ command: 'env' }, context);
      for (const [name, value] of Object.entries(planted)) {
        expect(result.content).not.toContain(value);
        expect(result.content).not.toContain(`${name}=`);
      }
      expect(result.content).toContain('PATH=');
      expect(result.content).toContain('HOME=');
    });

    it('adds what the owner lists, and nothing from the gateway otherwise', () => {
      const source = { ...planted, PATH: '/bin', LC_TIME: 'C', EDITOR: 'vi', SSH_AUTH_SOCK: '/s' };
      expect(toolEnvironment(source)).toEqual({ PATH: '/bin', LC_TIME: 'C' });
      expect(
        toolEnvironment(source, { env_passthrough: ['EDITOR', 'ABSENT'], env: { GIT_PAGER: 'cat' } }),
      ).toEqual({ PATH: '/bin', LC_TIME: 'C', EDITOR: 'vi', GIT_PAGER: 'cat' });
    });
  });
});
