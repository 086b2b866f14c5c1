/**
 * Issue 27, MCP servers as toolsets, through the real daemon and real MCP servers from the npm
 * registry (server-everything over stdio and Streamable HTTP, server-filesystem over stdio): tools
 * joined as `<server>__<tool>`, results stored as tool results, server errors and progress, the
 * approval path, include/exclude, per-session servers, and the failures: a server that will not
 * start, one that answers garbage, one killed mid-call. Both stores, where the store matters.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { BACKENDS } from './gateway-harness.js';
import { chatRequests, createAttached, tempDir, toolNames, useFixture } from './seed-fixture.js';
import { EVERYTHING, outcomeOf, pidsWith, toolResultOf, tracked, turnEvents } from './mcp-fixture.js';

const fx = useFixture();
const E2E_TIMEOUT_MS = 120_000;

/** `mcp_servers:` with server-everything over stdio, marked so the test finds its process. */
function everythingConfig(mark: string, extra = ''): string {
  return [
    'mcp_servers:',
    '  everything:',
    `    command: ${process.execPath}`,
    `    args: [${EVERYTHING}, stdio, ${mark}]`,
    extra,
  ].join('\n');
}

describe.each(BACKENDS)('MCP servers as toolsets on %s', (store) => {
  beforeAll(() => {
    fx.store = store;
  });

  it(
    'stdio server-everything: prefixed tools, a read-only call runs unasked and is stored, a server error, progress',
    async () => {
      const mark = tracked();
      const d = await fx.daemon({ extraConfig: everythingConfig(mark) });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir() });
      // Lazy: nothing is started before a turn needs the tools.
      expect(pidsWith(mark)).toEqual([]);

      const echo = await turnEvents(client, session, 'e1', 'call: everything__echo {"message": "hello mcp"}');
      const offered = toolNames(chatRequests(fx.demo).at(-1)!);
      expect(offered).toEqual(
        expect.arrayContaining(['terminal', 'clarify', 'everything__echo', 'everything__get-sum']),
      );
      expect(echo.some((e) => e.type === 'approval.request')).toBe(false);
      expect(toolResultOf(echo)).toEqual({
        content: 'Echo: hello mcp',
        is_error: false,
        name: 'everything__echo',
      });
      expect(outcomeOf(echo)).toBe('completed');
      expect(pidsWith(mark)).toHaveLength(1);

      // Stored as the tool result: the transcript shows it after a fresh resume.
      const snap = await client.call<{
        messages: { role: string; content: string; tool_call_id?: string }[];
      }>('session.resume', { session_id: session });
      const callId = echo.find((e) => e.type === 'tool.start')!['tool_call_id'];
      expect(snap.messages.filter((m) => m.role === 'tool')).toEqual([
        expect.objectContaining({ tool_call_id: callId, content: 'Echo: hello mcp' }),
      ]);

      // Arguments the server's schema refuses: the server's error, as a tool error; the turn completes.
      const bad = await turnEvents(client, session, 'e2', 'call: everything__get-sum {"a": "one", "b": 2}');
      const refused = toolResultOf(bad);
      expect(refused.is_error).toBe(true);
      expect(refused.content).toMatch(/Input validation error|invalid/i);
      expect(outcomeOf(bad)).toBe('completed');

      // A long-running call reports its progress as tool.output, then its result.
      const long = await turnEvents(
        client,
        session,
        'e3',
        'call: everything__trigger-long-running-operation {"duration": 3, "steps": 3}',
      );
      const progress = long.filter((e) => e.type === 'tool.output');
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress[0]).toMatchObject({ name: 'everything__trigger-long-running-operation' });
      expect(String(progress[0]!['last_line'])).toMatch(/^progress [123] of 3$/);
      expect(toolResultOf(long).content).toContain(
        'Long running operation completed. Duration: 3 seconds, Steps: 3.',
      );
      // One server process served every call.
      expect(pidsWith(mark)).toHaveLength(1);
    },
    E2E_TIMEOUT_MS,
  );
});
