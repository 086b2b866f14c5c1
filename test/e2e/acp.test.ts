/**
 * `gatehouse acp` driven by the ACP SDK's client side over its stdio, as an editor drives it, on
 * both stores: a new session and a streamed prompt, an approval asked through
 * session/request_permission (allowed, then denied), a cancel, and a load after the editor went
 * away (the session lives on, its history replayed). The crash cases are in acp-crash.test.ts.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { methods, type RequestPermissionRequest } from '@agentclientprotocol/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireBuild } from './cli.js';
import { Editor } from './acp-editor.js';
import { BACKENDS, startDaemon, useSharedDaemon } from './gateway-harness.js';

const editors: Editor[] = [];
beforeAll(requireBuild);
afterEach(async () => {
  await Promise.all(editors.splice(0).map((e) => e.close()));
});

const workspace = () => mkdtempSync(join(tmpdir(), 'gh-acp-'));

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
    expect(await first.close()).toBe(0);

    const second = await editor();
    await second.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    expect(second.text(sessionId, 'user_message_chunk')).toBe('remember this');
    expect(second.text(sessionId, 'agent_message_chunk')).toBe(
      'Demo model (scripted stand-in): you said: remember this',
    );
    // And it goes on from there.
    const answer = await second.agent.request(methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: 'text', text: 'and this' }],
    });
    expect(answer.stopReason).toBe('end_turn');
  });

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
