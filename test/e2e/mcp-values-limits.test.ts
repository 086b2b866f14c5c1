/**
 * The bytes of own MCP server values the daemon holds in memory are bounded (docs/rpc-methods.md,
 * session.mcp.supply): a session's (`limits.mcp_values_max_bytes`) and all sessions' together
 * (`limits.mcp_values_total_max_bytes`). Through the real daemon and a WebSocket client: a value
 * past either bound is refused with invalid_params naming the limit, before anything is held or
 * written (no session, no fork), and a deleted session's values make room again.
 */
import { expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { EVERYTHING, useMcpFixture } from './mcp-fixture.js';
import { runTurn, tempDir } from './seed-fixture.js';

const fx = useMcpFixture();
const E2E_TIMEOUT_MS = 120_000;
const SESSION_MAX = 1024;
const TOTAL_MAX = 2048;
const LIMITS = `limits:\n  mcp_values_max_bytes: ${SESSION_MAX}\n  mcp_values_total_max_bytes: ${TOTAL_MAX}\n`;

/** An own stdio server (left disabled: never started) whose one env value is `bytes` long. */
function servers(bytes: number): Record<string, unknown> {
  return {
    keyed: {
      command: process.execPath,
      args: [EVERYTHING, 'stdio'],
      env: { GH_TEST_API_KEY: 'k'.repeat(bytes) },
      enabled: false,
    },
  };
}

async function titles(client: GatewayClient): Promise<string[]> {
  const { sessions } = await client.call<{ sessions: { title: string | null }[] }>('session.list', {});
  return sessions.map((s) => s.title ?? '').sort();
}

function refusal(limit: string): Record<string, unknown> {
  return { code: -32602, reason: 'invalid_params', details: { field: 'mcp_servers', limit } };
}

it(
  "refuses own MCP server values past a session's or the gateway's byte limit, holding and writing nothing",
  async () => {
    const d = await fx.daemon({ extraConfig: LIMITS });
    const client = await d.connect();
    const cwd = tempDir();
    const create = (title: string, bytes: number) =>
      client.call<{ session_id: string }>('session.create', {
        cwd,
        title,
        request_id: title,
        mcp_servers: servers(bytes),
      });

    // Past a session's limit: refused, and no session was made.
    const tooBig = await create('too-big', SESSION_MAX + 1).catch((e: unknown) => e);
    expect(tooBig).toMatchObject(refusal('mcp_values_max_bytes'));
    expect(tooBig).toMatchObject({ details: { max_bytes: SESSION_MAX } });
    expect((tooBig as Error).message).toMatch(/limits\.mcp_values_max_bytes/);
    expect(await titles(client)).toEqual([]);

    // Two sessions of 900 bytes each fit the total; a third would pass it.
    const a = await create('a', 900);
    const b = await create('b', 900);
    const third = await create('c', 900).catch((e: unknown) => e);
    expect(third).toMatchObject(refusal('mcp_values_total_max_bytes'));
    expect((third as Error).message).toMatch(/limits\.mcp_values_total_max_bytes/);
    expect(await titles(client)).toEqual(['a', 'b']);

    // session.mcp.supply past a session's limit is refused too; within it, it is held.
    const supplied = await client
      .call('session.mcp.supply', { session_id: a.session_id, mcp_servers: servers(SESSION_MAX + 1) })
      .catch((e: unknown) => e);
    expect(supplied).toMatchObject(refusal('mcp_values_max_bytes'));
    expect(
      await client.call('session.mcp.supply', { session_id: a.session_id, mcp_servers: servers(800) }),
    ).toEqual({ session_id: a.session_id, supplied: ['keyed'], unsupplied: [] });

    // A fork copies its source's values: past the total it is refused, and no fork is made.
    await client.call('session.resume', { session_id: a.session_id });
    await runTurn(client, a.session_id, 'first', 'hello');
    const fork = await client.call('session.fork', { session_id: a.session_id }).catch((e: unknown) => e);
    expect(fork).toMatchObject(refusal('mcp_values_total_max_bytes'));
    expect(await titles(client)).toEqual(['a', 'b']);

    // A deleted session's values make room: the third session is made now.
    await client.call('session.delete', { session_id: b.session_id });
    await create('c', 900);
    expect(await titles(client)).toEqual(['a', 'c']);
  },
  E2E_TIMEOUT_MS,
);
