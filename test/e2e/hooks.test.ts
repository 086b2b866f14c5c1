/**
 * Hooks (LOC-5 `accept_hooks`, docs/hooks.md) through the real daemon, the demo model and real bash:
 * a before_tool hook of config.yaml blocks a command with a reason the user and the model both see;
 * a hook that hangs is stopped at its timeout, and failing after_tool and turn_start hooks are
 * reported (event and transcript); a project's own
 * hooks (.gatehouse/hooks.yaml) run only in a session created with accept_hooks: true.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';
import { BACKENDS, nextEvent } from './gateway-harness.js';
import {
  chatRequests,
  createAttached,
  lastToolResult,
  runTurn,
  tempDir,
  useFixture,
  type Snapshot,
} from './seed-fixture.js';

const fx = useFixture();
const E2E_TIMEOUT_MS = 180_000;
/** Events under a loaded machine: generous, never a timing assertion. */
const EVENT_WAIT_MS = 90_000;

describe.each(BACKENDS)('hooks on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  describe('hooks', () => {
    it(
      'a before_tool hook blocks `rm`: the chat shows its reason, the next model request carries it, the file stays',
      async () => {
        const seen = join(tempDir(), 'seen.json');
        const d = await fx.daemon({
          extraConfig: [
            'hooks:',
            '  before_tool:',
            `    - command: cat > ${seen}`,
            '      name: record',
            '    - name: no-rm',
            '      tools: [terminal]',
            `      command: "if grep -q '\\"command\\":\\"rm '; then echo 'rm is not allowed here: move files to trash/ instead'; exit 2; fi"`,
          ].join('\n'),
        });
        const cwd = tempDir();
        writeFileSync(join(cwd, 'victim.txt'), 'keep me');

        const run = await runCli(d.home, ['chat', '--cwd', cwd], { input: 'run: rm victim.txt\n' });
        expect(run.stderr).toBe('');
        expect(run.code).toBe(0);
        expect(run.stdout).toContain(
          '⛔ blocked by the hook "no-rm": rm is not allowed here: move files to trash/ instead',
        );
        expect(readFileSync(join(cwd, 'victim.txt'), 'utf8')).toBe('keep me');

        const told = lastToolResult(chatRequests(fx.demo).at(-1)!);
        expect(told).toBe(
          'Blocked by the before_tool hook "no-rm" (config.yaml): rm is not allowed here: move files to trash/ instead\n' +
            'The tool call did not run.',
        );
        // What a hook reads on stdin (docs/hooks.md).
        const input = JSON.parse(readFileSync(seen, 'utf8')) as Record<string, unknown>;
        expect(input).toMatchObject({
          event: 'before_tool',
          tool_name: 'terminal',
          arguments: { command: 'rm victim.txt' },
        });
        expect(String(input['cwd'])).toContain('gh-work-');
        expect(input['session_id']).toMatch(/^\d{8}_\d{6}_[0-9a-f]{8}$/);
        expect(input['admission_id']).toEqual(expect.any(String));
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'a failing after_tool and a failing turn_start hook are reported: hook.failed events and the transcript',
      async () => {
        const d = await fx.daemon({
          extraConfig: [
            'hooks:',
            '  after_tool:',
            '    - { name: audit, command: "echo audit store is down; exit 3", tools: [terminal] }',
            '  turn_start:',
            '    - { name: greet, command: "echo greeter broke >&2; exit 5" }',
          ].join('\n'),
        });
        const client = await d.connect();
        const cwd = tempDir();
        const session_id = await createAttached(client, { cwd, yolo: true });

        const afterTool = nextEvent(
          client,
          'hook.failed',
          (e) => e.event['event'] === 'after_tool',
          EVENT_WAIT_MS,
        );
        const turnStart = nextEvent(
          client,
          'hook.failed',
          (e) => e.event['event'] === 'turn_start',
          EVENT_WAIT_MS,
        );
        await runTurn(client, session_id, 's1', 'run: echo ran > out.txt');
        expect((await afterTool).event).toMatchObject({
          hook: 'audit',
          origin: 'home',
          tool_name: 'terminal',
          message: 'exited with code 3: audit store is down',
        });
        expect((await turnStart).event).toMatchObject({
          hook: 'greet',
          origin: 'home',
          message: 'exited with code 5: greeter broke',
        });
        // Neither failure stops anything: the command ran and the turn completed.
        expect(readFileSync(join(cwd, 'out.txt'), 'utf8')).toBe('ran\n');

        const snap = await client.call<Snapshot>('session.resume', { session_id });
        const tool = snap.messages.find((m) => m.role === 'tool')!;
        expect(tool.content).toContain(
          'note: The after_tool hook "audit" (config.yaml) failed: it exited with code 3: audit store is down.',
        );
        expect(snap.messages).toContainEqual(
          expect.objectContaining({
            role: 'system',
            content:
              'The turn_start hook "greet" (config.yaml) failed: it exited with code 5: greeter broke.',
          }),
        );
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'a hook that hangs times out: the call goes on, viewers get hook.failed, the transcript says so',
      async () => {
        const d = await fx.daemon({
          extraConfig: [
            'hooks:',
            '  before_tool:',
            '    - { name: stuck, command: "sleep 30", timeout_s: 1 }',
            '  turn_end:',
            '    - { name: stuck-end, command: "sleep 30", timeout_s: 1 }',
          ].join('\n'),
        });
        const client = await d.connect();
        const cwd = tempDir();
        const session_id = await createAttached(client, { cwd, yolo: true });

        const failed = nextEvent(
          client,
          'hook.failed',
          (e) => e.event['event'] === 'before_tool',
          EVENT_WAIT_MS,
        );
        const ended = nextEvent(client, 'hook.failed', (e) => e.event['event'] === 'turn_end', EVENT_WAIT_MS);
        await runTurn(client, session_id, 's1', 'run: echo ran > out.txt');
        expect((await failed).event).toMatchObject({
          hook: 'stuck',
          origin: 'home',
          tool_name: 'terminal',
          message: 'timed out after 1 s and was stopped',
        });
        expect((await ended).event).toMatchObject({
          hook: 'stuck-end',
          message: 'timed out after 1 s and was stopped',
        });
        expect(readFileSync(join(cwd, 'out.txt'), 'utf8')).toBe('ran\n');

        const snap = await client.call<Snapshot>('session.resume', { session_id });
        const tool = snap.messages.find((m) => m.role === 'tool')!;
        expect(tool.content).toContain(
          'note: The before_tool hook "stuck" (config.yaml) failed: it timed out after 1 s and was stopped.',
        );
        expect(snap.messages).toContainEqual(
          expect.objectContaining({
            role: 'system',
            content:
              'The turn_end hook "stuck-end" (config.yaml) failed: it timed out after 1 s and was stopped.',
          }),
        );
      },
      E2E_TIMEOUT_MS,
    );

    it(
      'project hooks (.gatehouse/hooks.yaml) are ignored without accept_hooks and run with it',
      async () => {
        const d = await fx.daemon();
        const client = await d.connect();
        const cwd = tempDir();
        mkdirSync(join(cwd, '.gatehouse'));
        writeFileSync(
          join(cwd, '.gatehouse', 'hooks.yaml'),
          [
            'before_tool:',
            '  - name: project-guard',
            '    command: "echo the project says no; exit 2"',
            '',
          ].join('\n'),
        );

        const plain = await createAttached(client, { cwd, yolo: true });
        await runTurn(client, plain, 'p1', 'run: echo one > one.txt');
        expect(existsSync(join(cwd, 'one.txt'))).toBe(true);

        const accepting = await createAttached(client, { cwd, accept_hooks: true, yolo: true });
        const blocked = nextEvent(client, 'hook.blocked', (e) => e.session_id === accepting, EVENT_WAIT_MS);
        await runTurn(client, accepting, 'a1', 'run: echo two > two.txt');
        expect((await blocked).event).toMatchObject({
          hook: 'project-guard',
          origin: 'project',
          reason: 'the project says no',
        });
        expect(existsSync(join(cwd, 'two.txt'))).toBe(false);
        expect(lastToolResult(chatRequests(fx.demo).at(-1)!)).toMatch(
          /^Blocked by the before_tool hook "project-guard" \(the project\): the project says no/,
        );
      },
      E2E_TIMEOUT_MS,
    );
  });
});
