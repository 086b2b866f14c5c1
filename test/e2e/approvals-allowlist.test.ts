/**
 * Issue 25 through the real daemon and the demo model's `run: <command>`: a deny-list bypass shape
 * now asks and nothing is deleted (item 1); `approvals.mode: deny` refuses without asking and `off`
 * runs (item 6); an `always` answer is listed and revoked by `gatehouse approvals` exactly as
 * docs/approvals.md shows (item 3); and control characters in a tool's output reach the chat's
 * terminal visibly, never obeyed (item 7).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { nextEvent } from './gateway-harness.js';
import { requireBuild, runCli } from './cli.js';
import { chatRequests, createAttached, lastToolResult, tempDir, useFixture } from './seed-fixture.js';

const fx = useFixture();

beforeAll(() => {
  fx.store = 'sqlite';
  requireBuild();
});

async function submit(client: GatewayClient, session_id: string, id: string, command: string): Promise<void> {
  await client.call('prompt.submit', { session_id, submission_id: id, text: `run: ${command}` });
}

async function answer(
  client: GatewayClient,
  session_id: string,
  request: Record<string, unknown>,
  choice: string,
) {
  return client.call('approval.respond', {
    session_id,
    prompt_id: request['prompt_id'],
    execution_generation: request['execution_generation'],
    choice,
  });
}

describe('issue 25: approvals by allow-list through the daemon', () => {
  it('a deny-list bypass (`setsid rm -rf DIR`) asks, states its scope, and a denial deletes nothing', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const cwd = tempDir();
    const victim = join(tempDir(), 'victim');
    mkdirSync(victim);
    writeFileSync(join(victim, 'file.txt'), 'precious');
    const session_id = await createAttached(client, { cwd });

    const asked = nextEvent(client, 'approval.request');
    await submit(client, session_id, 'bypass', `setsid rm -rf ${victim}`);
    const request = (await asked).event;
    expect(request['command']).toBe(`setsid rm -rf ${victim}`);
    expect(request['reason']).toBe('not on the allow-list: setsid is not on the allow-list');
    expect(request['scope']).toBe(
      `"session" approves this exact command in ${cwd}, for this session; "always" approves this exact command in ${cwd}, from now on`,
    );
    const done = nextEvent(client, 'turn.complete');
    await expect(answer(client, session_id, request, 'deny')).resolves.toMatchObject({ status: 'resolved' });
    expect((await done).event).toMatchObject({ outcome: 'completed' });
    expect(existsSync(join(victim, 'file.txt'))).toBe(true);

    // A read-only command runs unasked.
    const quiet = nextEvent(client, 'turn.complete');
    let prompted = false;
    void nextEvent(client, 'approval.request', () => true, 60_000)
      .then(() => (prompted = true))
      .catch(() => undefined);
    await submit(client, session_id, 'safe', 'ls -la && git status 2>/dev/null; pwd');
    expect((await quiet).event).toMatchObject({ outcome: 'completed' });
    expect(prompted).toBe(false);
    expect(lastToolResult(chatRequests(fx.demo).at(-1)!)).toContain(cwd);
  });

  it('a remembered answer covers exactly the command shown: another payload, or the same words elsewhere, ask again', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const cwd = tempDir();
    const victim = join(tempDir(), 'victim');
    mkdirSync(victim);
    writeFileSync(join(victim, 'file.txt'), 'precious');
    const session_id = await createAttached(client, { cwd });
    const encoded = (code: string) =>
      `python3 -c 'import base64; exec(base64.b64decode("${Buffer.from(code).toString('base64')}"))'`;

    // "session" for a harmless payload: the prompt shows the payload itself, not a masked one.
    const benign = encoded('print("benign")');
    let asked = nextEvent(client, 'approval.request');
    await submit(client, session_id, 'benign', benign);
    let request = (await asked).event;
    expect(request['command']).toBe(benign);
    let done = nextEvent(client, 'turn.complete');
    await answer(client, session_id, request, 'session');
    expect((await done).event).toMatchObject({ outcome: 'completed' });

    // Another payload in the same session asks again; denied, it deletes nothing.
    const harmful = encoded(`import shutil; shutil.rmtree(${JSON.stringify(victim)})`);
    asked = nextEvent(client, 'approval.request');
    await submit(client, session_id, 'harmful', harmful);
    request = (await asked).event;
    expect(request['command']).toBe(harmful);
    done = nextEvent(client, 'turn.complete');
    await answer(client, session_id, request, 'deny');
    await done;
    expect(existsSync(join(victim, 'file.txt'))).toBe(true);

    // "always" for `rm -rf sub` in this cwd approves that, and not the same words for another path
    // or another cwd.
    mkdirSync(join(cwd, 'sub'));
    asked = nextEvent(client, 'approval.request');
    await submit(client, session_id, 'sub', 'rm -rf sub');
    request = (await asked).event;
    done = nextEvent(client, 'turn.complete');
    await answer(client, session_id, request, 'always');
    await done;
    expect(existsSync(join(cwd, 'sub'))).toBe(false);
    const elsewhere = tempDir();
    mkdirSync(join(elsewhere, 'sub'));
    const other = await createAttached(client, { cwd: elsewhere });
    asked = nextEvent(client, 'approval.request', (e) => e.session_id === other);
    await submit(client, other, 'sub-elsewhere', 'rm -rf sub');
    request = (await asked).event;
    done = nextEvent(client, 'turn.complete');
    await answer(client, other, request, 'deny');
    await done;
    expect(existsSync(join(elsewhere, 'sub'))).toBe(true);
    asked = nextEvent(client, 'approval.request');
    await submit(client, session_id, 'victim', `rm -rf ${victim}`);
    request = (await asked).event;
    done = nextEvent(client, 'turn.complete');
    await answer(client, session_id, request, 'deny');
    await done;
    expect(existsSync(join(victim, 'file.txt'))).toBe(true);
  });

  it('`gatehouse approvals list` and `revoke` show and forget an `always` answer', async () => {
    const d = await fx.daemon();
    const client = await d.connect();
    const cwd = tempDir();
    const session_id = await createAttached(client, { cwd });
    const asked = nextEvent(client, 'approval.request');
    await submit(client, session_id, 'touch', 'touch made-by-always');
    const request = (await asked).event;
    const done = nextEvent(client, 'turn.complete');
    await answer(client, session_id, request, 'always');
    await done;
    expect(existsSync(join(cwd, 'made-by-always'))).toBe(true);

    const listed = await runCli(d.home, ['approvals', 'list', '--json']);
    expect(listed.stderr).toBe('');
    const rules = (JSON.parse(listed.stdout) as { approvals: Record<string, unknown>[] }).approvals;
    const always = rules.find((r) => r['scope'] === 'always');
    expect(always).toMatchObject({ kind: 'command', cwd, shown: 'touch made-by-always', surface: 'local' });
    const id = String(always?.['id']);
    expect(id).toMatch(/^apr_[0-9a-f]{16}$/);

    const text = await runCli(d.home, ['approvals', 'list']);
    expect(text.stdout).toContain(`${id}  always  in ${cwd}\n    touch made-by-always`);

    const revoked = await runCli(d.home, ['approvals', 'revoke', id]);
    expect(revoked).toMatchObject({ code: 0, stderr: '' });
    expect(revoked.stdout).toBe(`Revoked ${id}: that command asks again.\n`);
    const after = JSON.parse((await runCli(d.home, ['approvals', 'list', '--json'])).stdout) as {
      approvals: Record<string, unknown>[];
    };
    expect(after.approvals.filter((r) => r['id'] === id)).toEqual([]);

    const again = await runCli(d.home, ['approvals', 'revoke', id]);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`No remembered approval has the id ${id}.`);
  });

  // One case per mode, each with its own daemon and its own time limit (two daemon starts in one
  // case outran the limit on a loaded machine).
  it.each(['deny', 'off'] as const)(
    '`approvals.mode: %s`: deny refuses without asking; off runs without asking',
    async (mode) => {
      const d = await fx.daemon({ extraConfig: `approvals:\n  mode: ${mode}\n` });
      const client = await d.connect();
      const cwd = tempDir();
      const session_id = await createAttached(client, { cwd });
      let prompted = false;
      void nextEvent(client, 'approval.request', () => true, 60_000)
        .then(() => (prompted = true))
        .catch(() => undefined);
      const done = nextEvent(client, 'turn.complete');
      await submit(client, session_id, mode, `touch made-in-${mode}`);
      expect((await done).event).toMatchObject({ outcome: 'completed' });
      expect(prompted).toBe(false);
      const told = lastToolResult(chatRequests(fx.demo).at(-1)!);
      if (mode === 'deny') {
        expect(told).toContain('Denied by configuration (approvals.mode: deny)');
        expect(existsSync(join(cwd, 'made-in-deny'))).toBe(false);
      } else {
        expect(existsSync(join(cwd, 'made-in-off'))).toBe(true);
      }
      await d.stop();
    },
  );

  it('control characters in a tool result reach `gatehouse chat` visibly, never as escape codes', async () => {
    const d = await fx.daemon();
    const cwd = tempDir();
    const run = await runCli(d.home, ['chat', '--cwd', cwd], {
      input: "run: printf '\\033[2J\\033[1A Allow ls? [o]nce'\n",
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('␛[2J␛[1A Allow ls? [o]nce');
    expect(run.stdout).not.toContain('\u001b[2J');
    expect(run.stdout).not.toContain('\u001b[1A');

    // The stored output, as `sessions --show` and `sessions --search` print it.
    const id = /session (\d{8}_\d{6}_[0-9a-f]{8})/.exec(run.stdout)?.[1] ?? '';
    const shown = await runCli(d.home, ['sessions', '--show', id]);
    expect(shown.stdout).toContain('␛[2J␛[1A Allow ls? [o]nce');
    expect(shown.stdout).not.toContain('\u001b');
    const found = await runCli(d.home, ['sessions', '--search', 'Allow']);
    expect(found.stdout).toContain('␛[');
    expect(found.stdout).not.toContain('\u001b');
  });
});
