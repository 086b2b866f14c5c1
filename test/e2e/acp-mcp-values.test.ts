/**
 * `gatehouse acp` and the editor's MCP servers' env values, which the gateway holds in memory only
 * (docs/integrations.md "Per session"): through the real daemon, a real bridge and server-everything.
 * The editor's server gets its secret; the bridge gives it again when the gateway restarted under
 * it; a fresh bridge's session/load brings it from the editor (before that, the server waits and
 * says why); a changed server refuses the load; and the secret is nowhere in the home. The stores'
 * side is proven on both backends by mcp-values.test.ts; this one runs on SQLite.
 */
import { readFileSync } from 'node:fs';
import { methods, type McpServer } from '@agentclientprotocol/sdk';
import { afterEach, expect, it } from 'vitest';
import { Editor } from './acp-editor.js';
import { storeEnv, type RunningDaemon } from './gateway-harness.js';
import { EVERYTHING, filesHolding, pidsWith, tracked, useMcpFixture } from './mcp-fixture.js';
import { tempDir } from './seed-fixture.js';

const fx = useMcpFixture();
const editors: Editor[] = [];
afterEach(async () => {
  await Promise.all(editors.splice(0).map((e) => e.close()));
});
const SECRET = `sk-acp-sentinel-${process.pid}-numbat`;

async function editorOn(d: RunningDaemon): Promise<Editor> {
  const e = await Editor.start(d.home, storeEnv(d.home));
  editors.push(e);
  return e;
}

/** The content of the session's last tool result, read from the gateway. */
async function lastToolResult(d: RunningDaemon, sessionId: string): Promise<string> {
  const client = await d.connect();
  const { messages } = await client.call<{ messages: { role: string; content: string }[] }>(
    'session.history',
    {
      session_id: sessionId,
    },
  );
  await client.close();
  return messages.filter((m) => m.role === 'tool').at(-1)!.content;
}

async function prompt(e: Editor, sessionId: string, text: string): Promise<unknown> {
  return e.agent.request(methods.agent.session.prompt, { sessionId, prompt: [{ type: 'text', text }] });
}

it(
  "the editor's server values: used, given again after a restart by the bridge and by session/load, never stored",
  { timeout: 240_000 },
  async () => {
    const mark = tracked();
    const keyed: McpServer = {
      name: 'Keyed',
      command: process.execPath,
      args: [EVERYTHING, 'stdio', mark],
      env: [{ name: 'GH_TEST_API_KEY', value: SECRET }],
    };
    let d = await fx.daemon();
    const cwd = tempDir();
    const first = await editorOn(d);
    const { sessionId } = await first.agent.request(methods.agent.session.new, { cwd, mcpServers: [keyed] });
    expect(await prompt(first, sessionId, 'call: keyed__echo {"message": "from the editor"}')).toEqual({
      stopReason: 'end_turn',
    });
    expect(await lastToolResult(d, sessionId)).toBe('Echo: from the editor');
    expect(readFileSync(`/proc/${pidsWith(mark)[0]}/environ`, 'utf8').split('\0')).toContain(
      `GH_TEST_API_KEY=${SECRET}`,
    );

    // The gateway restarts under the same editor: its bridge gives the values again by itself.
    const home = d.home;
    expect(await d.stop()).toBe(0);
    fx.forget(d);
    d = await fx.daemon({ home });
    expect(await prompt(first, sessionId, 'call: keyed__echo {"message": "bridge gave it again"}')).toEqual({
      stopReason: 'end_turn',
    });
    expect(await lastToolResult(d, sessionId)).toBe('Echo: bridge gave it again');

    // Restarted again, and a new bridge that never saw the values: the server waits, saying why.
    expect(await d.stop()).toBe(0);
    fx.forget(d);
    d = await fx.daemon({ home });
    await first.close();
    const second = await editorOn(d);
    await second.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    await prompt(second, sessionId, 'call: keyed__unavailable');
    expect(await lastToolResult(d, sessionId)).toMatch(
      /^The MCP server "keyed" is not available: its env or header values are held only in the gateway's memory/,
    );
    expect(pidsWith(mark)).toEqual([]);

    // A server other than the one the session was created with refuses the load.
    await expect(
      second.agent.request(methods.agent.session.load, {
        sessionId,
        cwd,
        mcpServers: [{ ...keyed, args: [EVERYTHING, 'stdio', 'another'] }],
      }),
    ).rejects.toMatchObject({ code: -32028, data: { reason: 'mcp_servers_mismatch' } });

    // The editor loads the session with its servers, as ACP editors do: the values come back.
    await second.agent.request(methods.agent.session.load, { sessionId, cwd, mcpServers: [keyed] });
    expect(await prompt(second, sessionId, 'call: keyed__echo {"message": "loaded with it"}')).toEqual({
      stopReason: 'end_turn',
    });
    expect(await lastToolResult(d, sessionId)).toBe('Echo: loaded with it');

    expect(await d.stop()).toBe(0);
    expect(filesHolding(home, SECRET)).toEqual([]);
  },
);
