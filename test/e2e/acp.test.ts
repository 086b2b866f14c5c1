/**
 * `gatehouse acp` driven by the ACP SDK's client side over its stdio, as an editor drives it, on
 * both stores: a new session and a streamed prompt, an approval asked through
 * session/request_permission (allowed, then denied), a cancel, and a load after the editor went
 * away (the session lives on, its history replayed). The crash cases are in acp-crash.test.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { methods, type RequestPermissionRequest } from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CLI, finished, requireBuild, runCli, tempHome } from './cli.js';
import { Editor } from './acp-editor.js';
import { BACKENDS, nextEvent, startDaemon, useSharedDaemon } from './gateway-harness.js';

const editors: Editor[] = [];
beforeAll(requireBuild);
afterEach(async () => {
  await Promise.all(editors.splice(0).map((e) => e.close()));
});

const workspace = () => mkdtempSync(join(tmpdir(), 'gh-acp-'));

const PAGE = readFileSync(resolve(import.meta.dirname, '../../docs/integrations.md'), 'utf8');

/** The fenced block right after `<!-- kind: name -->` on the page. */
function block(kind: 'example' | 'output', name: string): string {
  const match = new RegExp(`<!-- ${kind}: ${name} -->\\n\`\`\`[a-z]*\\n([\\s\\S]*?)\`\`\``).exec(PAGE);
  if (!match) throw new Error(`docs/integrations.md has no ${kind} block ${name}`);
  return match[1]!;
}

/** `gatehouse` on the PATH, as an installed package puts it: this build's CLI. */
function onPath(): NodeJS.ProcessEnv {
  const bin = mkdtempSync(join(tmpdir(), 'gh-acp-bin-'));
  writeFileSync(join(bin, 'gatehouse'), `#!/bin/sh\nexec "${process.execPath}" "${CLI}" "$@"\n`, {
    mode: 0o755,
  });
  return { PATH: `${bin}${delimiter}${process.env['PATH']}` };
}

function allowOnce(request: RequestPermissionRequest) {
  const option = request.options.find((o) => o.kind === 'allow_once')!;
  return { outcome: 'selected' as const, optionId: option.optionId };
}

function reject(request: RequestPermissionRequest) {
  const option = request.options.find((o) => o.kind === 'reject_once')!;
  return { outcome: 'selected' as const, optionId: option.optionId };
}

describe.each(BACKENDS)('gatehouse acp on %s', (store) => {
  const daemon = useSharedDaemon(() => startDaemon({ store }));

  /** A new editor process (the load case needs a second one). */
  async function newEditor(): Promise<Editor> {
    const e = await Editor.start((await daemon()).home);
    editors.push(e);
    return e;
  }
  // One editor for the cases of this store: each starts `gatehouse acp` once, not per case.
  let shared: Editor | null = null;
  afterAll(async () => {
    await shared?.close();
    shared = null;
  });
  async function editor(): Promise<Editor> {
    shared ??= await Editor.start((await daemon()).home);
    return shared;
  }

  it('creates a session and streams the answer to a prompt', { timeout: 60_000 }, async () => {
    const e = await editor();
    const cwd = workspace();
    const { sessionId } = await e.agent.request(methods.agent.session.new, { cwd, mcpServers: [] });
    let answered = false;
    let chunkBeforeAnswer: boolean | null = null;
    const chunk = e.nextUpdate(
      (n) => n.sessionId === sessionId && n.update.sessionUpdate === 'agent_message_chunk',
    );
    void chunk.then(() => (chunkBeforeAnswer = !answered));
    const answer = await e.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'hello from the editor' }],
    });
    answered = true;
    expect(answer.stopReason).toBe('end_turn');
    expect(chunkBeforeAnswer).toBe(true); // streamed as the turn ran, not sent with the answer
    expect(e.text(sessionId, 'agent_message_chunk')).toBe(
      'Demo model (scripted stand-in): you said: hello from the editor',
    );
    // A Gatehouse session like any other: source acp, the editor's name as its label, the cwd given.
    const client = await (await daemon()).connect();
    const info = await client.call<{ source: string; editor: string; cwd: string }>('session.info', {
      session_id: sessionId,
    });
    expect(info).toMatchObject({ source: 'acp', editor: 'Test Editor', cwd });
    await client.close();
  });

  it('asks the editor for approval, and runs or refuses as it answers', { timeout: 60_000 }, async () => {
    const e = await editor();
    const cwd = workspace();
    const { sessionId } = await e.agent.request(methods.agent.session.new, { cwd, mcpServers: [] });

    const before = e.permissions.length;
    const mine = () => e.permissions.slice(before);
    e.answer = allowOnce;
    const allowed = await e.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'run: touch allowed.txt' }],
    });
    expect(allowed.stopReason).toBe('end_turn');
    expect(existsSync(join(cwd, 'allowed.txt'))).toBe(true);
    expect(mine()).toHaveLength(1);
    const asked = mine()[0]!;
    expect(asked.toolCall.title).toContain('touch allowed.txt');
    expect(asked.options.map((o) => o.optionId)).toContain('once');
    // The permission names the tool call the editor was shown, which then completes.
    const call = e.updates.find((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'tool_call')!
      .update as {
      toolCallId: string;
      kind: string;
    };
    expect(call.kind).toBe('execute');
    expect(asked.toolCall.toolCallId).toBe(call.toolCallId);
    expect(
      e.updates.some(
        (n) =>
          n.update.sessionUpdate === 'tool_call_update' &&
          n.update.toolCallId === call.toolCallId &&
          n.update.status === 'completed',
      ),
    ).toBe(true);

    e.answer = reject;
    const denied = await e.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'run: touch denied.txt' }],
    });
    expect(denied.stopReason).toBe('end_turn');
    expect(mine()).toHaveLength(2);
    expect(existsSync(join(cwd, 'denied.txt'))).toBe(false);
    const last = e.updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'tool_call_update')
      .at(-1)!.update;
    expect(last).toMatchObject({ status: 'failed' });

    // Answered first by another viewer (the chat, the dashboard): the editor's request is withdrawn.
    const other = await (await daemon()).connect();
    await other.call('session.resume', { session_id: sessionId });
    const waiting = nextEvent(other, 'approval.request', (ev) => ev.session_id === sessionId);
    let withdrawn = false;
    let markAsked!: () => void;
    const editorAsked = new Promise<void>((resolve) => (markAsked = resolve));
    e.answer = (_request, signal) =>
      new Promise((resolveAnswer) => {
        signal.addEventListener('abort', () => {
          withdrawn = true;
          resolveAnswer({ outcome: 'cancelled' });
        });
        markAsked();
      });
    const elsewhere = e.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'run: touch elsewhere.txt' }],
    });
    const request = (await waiting).event;
    // The other viewer answers once the editor was asked too (not before the bridge got to ask).
    await editorAsked;
    await other.call('approval.respond', {
      session_id: sessionId,
      execution_generation: request['execution_generation'],
      prompt_id: request['prompt_id'],
      choice: 'once',
    });
    expect((await elsewhere).stopReason).toBe('end_turn');
    expect(existsSync(join(cwd, 'elsewhere.txt'))).toBe(true);
    expect(withdrawn).toBe(true);
    await other.close();
  });

  it('cancels a running turn with session/cancel', { timeout: 60_000 }, async () => {
    const e = await editor();
    const { sessionId } = await e.agent.request(methods.agent.session.new, {
      cwd: workspace(),
      mcpServers: [],
    });
    const started = e.nextUpdate((n) => n.sessionId === sessionId && n.update.sessionUpdate === 'tool_call');
    const answer = e.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'run: sleep 30' }],
    });
    await started;
    await e.agent.notify(methods.agent.session.cancel, { sessionId });
    expect((await answer).stopReason).toBe('cancelled');
  });

  it('loads a session after its editor went away, replaying its history', { timeout: 60_000 }, async () => {
    const first = await newEditor();
    const cwd = workspace();
    const { sessionId } = await first.agent.request(methods.agent.session.new, { cwd, mcpServers: [] });
    await first.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'remember this' }],
    });
    // The editor goes away mid-turn: the turn goes on in the daemon and completes.
    const viewer = await (await daemon()).connect();
    await viewer.call('session.resume', { session_id: sessionId });
    const settled = nextEvent(viewer, 'admission.settled', (ev) => ev.session_id === sessionId);
    const running = first.nextUpdate(
      (n) => n.update.sessionUpdate === 'tool_call_update' && n.update.status === 'in_progress',
    );
    void first.agent
      .request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'run: echo begun; sleep 1; echo ended' }],
      })
      .catch(() => undefined); // its answer is lost with the editor
    await running;
    expect(await first.close()).toBe(0);
    expect((await settled).event['outcome']).toBe('completed');
    await viewer.close();

    const second = await editor();
    await second.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    expect(second.text(sessionId, 'user_message_chunk')).toBe(
      'remember thisrun: echo begun; sleep 1; echo ended',
    );
    expect(second.text(sessionId, 'agent_message_chunk')).toContain(
      'Demo model (scripted stand-in): you said: remember this',
    );
    expect(
      second.updates.some(
        (n) =>
          n.sessionId === sessionId &&
          n.update.sessionUpdate === 'tool_call_update' &&
          n.update.status === 'completed' &&
          JSON.stringify(n.update.content).includes('ended'),
      ),
    ).toBe(true);
    // And it goes on from there.
    const answer = await second.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'and this' }],
    });
    expect(answer.stopReason).toBe('end_turn');
  });

  it.runIf(store === 'sqlite')(
    "docs/integrations.md: Zed's agent_servers entry runs as written and drives a session",
    { timeout: 60_000 },
    async () => {
      const home = (await daemon()).home;
      const zed = JSON.parse(block('example', 'acp-zed')) as {
        agent_servers: {
          Gatehouse: { type: string; command: string; args: string[]; env: Record<string, string> };
        };
      };
      const entry = zed.agent_servers.Gatehouse;
      expect(entry.type).toBe('custom');
      // As Zed does: the command from the PATH, with the entry's args and env.
      const child = spawn(entry.command, entry.args, {
        env: { ...process.env, ...onPath(), GATEHOUSE_HOME: home, GATEHOUSE_DEBUG: '', ...entry.env },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const e = await Editor.over(child, 'Zed');
      editors.push(e);
      const { sessionId } = await e.agent.request(methods.agent.session.new, {
        cwd: workspace(),
        mcpServers: [],
      });
      const answer = await e.agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: [{ type: 'text', text: 'hi' }],
      });
      expect(answer.stopReason).toBe('end_turn');
      expect(e.text(sessionId, 'agent_message_chunk')).toBe('Demo model (scripted stand-in): you said: hi');
    },
  );

  it.runIf(store === 'sqlite')(
    'docs/integrations.md: the initialize command line prints the answer shown',
    { timeout: 60_000 },
    async () => {
      const child = spawn('bash', ['-euo', 'pipefail'], {
        env: { ...process.env, ...onPath(), GATEHOUSE_HOME: (await daemon()).home, GATEHOUSE_DEBUG: '' },
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      child.stdin.end(block('example', 'acp-initialize'));
      const run = await finished(child);
      expect(run.stderr).toBe('');
      expect(run.stdout).toBe(block('output', 'acp-initialize'));
      expect(run.code).toBe(0);
    },
  );

  it.runIf(store === 'sqlite')(
    'starts the gateway in the background when none runs in its home',
    { timeout: 60_000 },
    async () => {
      const home = tempHome();
      const e = await Editor.start(home);
      editors.push(e);
      try {
        const { sessionId } = await e.agent.request(methods.agent.session.new, {
          cwd: workspace(),
          mcpServers: [],
        });
        expect(
          await e.agent.request(methods.agent.session.prompt, {
            sessionId,
            prompt: [{ type: 'text', text: 'are you there' }],
          }),
        ).toEqual({ stopReason: 'end_turn' });
        expect(e.stderr).toBe('');
      } finally {
        expect((await runCli(home, ['stop'])).code).toBe(0);
      }
    },
  );

  it('refuses what it cannot honour, naming it', { timeout: 60_000 }, async () => {
    const e = await editor();
    const cwd = workspace();
    await expect(
      e.agent.request(methods.agent.session.new, {
        cwd,
        mcpServers: [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:1/sse', headers: [] }],
      }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringContaining('SSE') as unknown });
    await expect(
      e.agent.request(methods.agent.session.load, { sessionId: 'no-such-session', cwd, mcpServers: [] }),
    ).rejects.toMatchObject({ code: -32002 });
  });
});
