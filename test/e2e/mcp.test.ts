/**
 * Issue 27, MCP servers as toolsets, through the real daemon and real MCP servers from the npm
 * registry (server-everything over stdio and Streamable HTTP, server-filesystem over stdio): tools
 * joined as `<server>__<tool>`, results stored as tool results, server errors and progress, the
 * approval path, include/exclude, per-session servers, and the failures: a server that will not
 * start, one that answers garbage, one killed mid-call. Both stores, where the store matters.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { nextEvent, resumeUntil } from './gateway-harness.js';
import { chatRequests, createAttached, tempDir, toolNames } from './seed-fixture.js';
import {
  describeEachStore,
  EVERYTHING,
  FILESYSTEM,
  outcomeOf,
  pidsWith,
  startHttpEverything,
  toolResultOf,
  tracked,
  turnEvents,
  type Event as SessionEventBody,
  useMcpFixture,
} from './mcp-fixture.js';

const fx = useMcpFixture();
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

describeEachStore(fx, 'MCP servers as toolsets on %s', () => {
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

  it(
    'stdio server-filesystem: a write asks (approved over RPC) and runs, a read runs unasked; include, per-tool approval',
    async () => {
      const root = tempDir();
      const config = [
        'mcp_servers:',
        '  fs:',
        `    command: ${process.execPath}`,
        `    args: [${FILESYSTEM}, ${root}, ${tracked()}]`,
        '    tools:',
        '      include: [read_text_file, write_file, create_directory]',
        '      approval: {create_directory: never}',
      ].join('\n');
      const d = await fx.daemon({ extraConfig: config });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: root });
      const target = join(root, 'note.txt');

      const asked = nextEvent(client, 'approval.request', (e) => e.session_id === session, 60_000);
      const writing = turnEvents(
        client,
        session,
        'w1',
        `call: fs__write_file {"path": "${target}", "content": "written by mcp"}`,
      );
      const request = (await asked).event;
      expect(request).toMatchObject({
        kind: 'command',
        command: `fs__write_file {"path":"${target}","content":"written by mcp"}`,
        reason: '"write_file" of the MCP server "fs" is not marked read-only',
      });
      expect(existsSync(target)).toBe(false);
      await approve(client, session, request, 'once');
      const wrote = await writing;
      expect(toolResultOf(wrote)).toMatchObject({ is_error: false, name: 'fs__write_file' });
      expect(readFileSync(target, 'utf8')).toBe('written by mcp');
      expect(
        toolNames(chatRequests(fx.demo).at(-1)!)
          .filter((n) => n.startsWith('fs__'))
          .sort(),
      ).toEqual(['fs__create_directory', 'fs__read_text_file', 'fs__write_file']);

      // Read-only by its annotations: no question. `approval: never` for one tool: none either.
      const read = await turnEvents(client, session, 'r1', `call: fs__read_text_file {"path": "${target}"}`);
      expect(read.some((e) => e.type === 'approval.request')).toBe(false);
      expect(toolResultOf(read)).toMatchObject({ content: 'written by mcp', is_error: false });
      const made = await turnEvents(
        client,
        session,
        'm1',
        `call: fs__create_directory {"path": "${join(root, 'sub')}"}`,
      );
      expect(made.some((e) => e.type === 'approval.request')).toBe(false);
      expect(existsSync(join(root, 'sub'))).toBe(true);

      // A denial sends nothing.
      const denied = nextEvent(client, 'approval.request', (e) => e.session_id === session, 60_000);
      const refusing = turnEvents(
        client,
        session,
        'w2',
        `call: fs__write_file {"path": "${target}", "content": "no"}`,
      );
      await approve(client, session, (await denied).event, 'deny');
      expect(toolResultOf(await refusing)).toMatchObject({
        content: 'The user denied this MCP call. It was not sent.',
        is_error: true,
      });
      expect(readFileSync(target, 'utf8')).toBe('written by mcp');
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'Streamable HTTP server-everything: tools listed and called over HTTP, with progress',
    async () => {
      const { url } = await startHttpEverything();
      const config = [
        'mcp_servers:',
        '  remote:',
        `    url: ${url}`,
        '    headers: {X-Test: gatehouse}',
      ].join('\n');
      const d = await fx.daemon({ extraConfig: config });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir() });
      const echo = await turnEvents(client, session, 'h1', 'call: remote__echo {"message": "over http"}');
      expect(toolResultOf(echo)).toEqual({
        content: 'Echo: over http',
        is_error: false,
        name: 'remote__echo',
      });
      const long = await turnEvents(
        client,
        session,
        'h2',
        'call: remote__trigger-long-running-operation {"duration": 2, "steps": 2}',
      );
      expect(long.filter((e) => e.type === 'tool.output').length).toBeGreaterThanOrEqual(1);
      expect(toolResultOf(long).content).toContain('Long running operation completed.');
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'a server killed mid-call: the call ends with a clear tool error, is not sent again, and the server restarts',
    async () => {
      const mark = tracked();
      const d = await fx.daemon({ extraConfig: everythingConfig(mark) });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir() });
      const progress = nextEvent(client, 'tool.output', (e) => e.session_id === session, 60_000);
      const running = turnEvents(
        client,
        session,
        'k1',
        'call: everything__trigger-long-running-operation {"duration": 30, "steps": 30}',
      );
      await progress;
      const [pid] = pidsWith(mark);
      process.kill(pid!, 'SIGKILL');
      const events = await running;
      expect(outcomeOf(events)).toBe('completed');
      const result = toolResultOf(events);
      expect(result.is_error).toBe(true);
      expect(result.content).toMatch(
        /^The MCP server "everything" stopped during the call of "trigger-long-running-operation" \(.*\)\. Its effect is unknown; the call was not sent again\.$/,
      );
      // The model was told exactly that, once; the next call finds the server started again.
      expect(chatRequests(fx.demo).filter((r) => r.messages.at(-1)?.role === 'tool')).toHaveLength(1);
      const again = await turnEvents(client, session, 'k2', 'call: everything__echo {"message": "back"}');
      expect(toolResultOf(again)).toMatchObject({ content: 'Echo: back', is_error: false });
      expect(pidsWith(mark)).toHaveLength(1);
      expect(pidsWith(mark)[0]).not.toBe(pid);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'a daemon SIGKILLed mid-call: the turn is unknown after the restart and the call is never sent again',
    async () => {
      const mark = tracked();
      const config = everythingConfig(mark);
      let d = await fx.daemon({ extraConfig: config });
      let client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir() });
      const progress = nextEvent(client, 'tool.output', (e) => e.session_id === session, 60_000);
      await client.call('prompt.submit', {
        session_id: session,
        submission_id: 'c1',
        text: 'call: everything__trigger-long-running-operation {"duration": 30, "steps": 30}',
      });
      await progress;
      const firstServer = pidsWith(mark);
      expect(firstServer).toHaveLength(1);
      await d.kill();
      fx.forget(d);
      const requests = chatRequests(fx.demo).length;

      d = await fx.daemon({ home: d.home, extraConfig: config });
      client = await d.connect();
      const snap = await resumeUntil<{
        state: string;
        pending_admissions: { submission_id: string; state: string }[];
      }>(client, session, (s) =>
        s.pending_admissions.every((a) => a.state !== 'running' && a.state !== 'queued'),
      );
      expect(snap.state).toBe('unknown');
      expect(snap.pending_admissions).toMatchObject([{ submission_id: 'c1', state: 'unknown' }]);
      // Not re-sent: the new daemon asked the model nothing and started no server at all.
      expect(chatRequests(fx.demo)).toHaveLength(requests);
      expect(pidsWith(mark).filter((pid) => !firstServer.includes(pid))).toEqual([]);
    },
    E2E_TIMEOUT_MS,
  );
});

describe('MCP servers: failures and per-session servers', () => {
  it(
    'a server that will not start, and one that answers garbage: a clear tool error, the turn completes',
    async () => {
      // It ignores its stdin's end: only the gateway's stop ends it (marked by its own path).
      const garbage = tracked(join(tempDir(), 'garbage.js'));
      writeFileSync(
        garbage,
        "process.stdout.write('this is not json-rpc\\n'); setInterval(() => {}, 1000);\n",
      );
      const config = [
        'mcp_servers:',
        '  missing:',
        '    command: /nonexistent/mcp-server',
        '  noisy:',
        `    command: ${process.execPath}`,
        `    args: [${garbage}]`,
      ].join('\n');
      const d = await fx.daemon({ extraConfig: config });
      const client = await d.connect();
      const session = await createAttached(client, { cwd: tempDir() });
      const first = await turnEvents(client, session, 'f1', 'call: missing__unavailable');
      expect(outcomeOf(first)).toBe('completed');
      const offered = chatRequests(fx.demo)
        .at(-1)!
        .tools!.filter((t) => t.function.name.endsWith('__unavailable'));
      expect(offered.map((t) => t.function.name).sort()).toEqual([
        'missing__unavailable',
        'noisy__unavailable',
      ]);
      const descriptions = Object.fromEntries(
        (chatRequests(fx.demo).at(-1)!.tools as { function: { name: string; description: string } }[]).map(
          (t) => [t.function.name, t.function.description],
        ),
      );
      expect(descriptions['missing__unavailable']).toMatch(
        /^The MCP server "missing" is not available: its command was not found \(.*ENOENT.*\)\./,
      );
      expect(descriptions['noisy__unavailable']).toMatch(
        /^The MCP server "noisy" is not available: it answered something that is not MCP \(.*\)\./,
      );
      const result = toolResultOf(first);
      expect(result.is_error).toBe(true);
      expect(result.content).toMatch(/^MCP server "missing" is not available: its command was not found/);
      // A graceful stop ends the garbage server too (its failed start's close was still under way).
      fx.forget(d);
      expect(await d.stop()).toBe(0);
      expect(pidsWith(garbage)).toEqual([]);
    },
    E2E_TIMEOUT_MS,
  );

  it(
    'session.create mcp_servers: a server of its own, a profile server left out, refusals name the field',
    async () => {
      const d = await fx.daemon({ extraConfig: everythingConfig(tracked()) });
      const client = await d.connect();
      const own = {
        mine: {
          command: process.execPath,
          args: [EVERYTHING, 'stdio', tracked()],
          tools: { include: ['echo'] },
        },
        everything: { enabled: false },
      };
      const session = await createAttached(client, { cwd: tempDir(), mcp_servers: own });
      const events = await turnEvents(client, session, 's1', 'call: mine__echo {"message": "own server"}');
      expect(toolResultOf(events)).toMatchObject({ content: 'Echo: own server', is_error: false });
      expect(toolNames(chatRequests(fx.demo).at(-1)!).filter((n) => n.includes('__'))).toEqual([
        'mine__echo',
      ]);
      const info = await client.call<{ mcp_servers?: unknown }>('session.info', { session_id: session });
      expect(info.mcp_servers).toEqual({ profile: [], own: ['mine'] });

      for (const [mcp_servers, message] of [
        [{ nothere: { enabled: false } }, /cannot leave out the MCP server "nothere"/],
        [{ bad__name: { command: 'x' } }, /"bad__name" is not a server name/],
        [{ half: { command: 'x', url: 'http://127.0.0.1:1/mcp' } }, /stdio server|Streamable HTTP/],
        [{ web: { url: 'file:///etc/passwd' } }, /http or https URL|stdio server/],
      ] as const) {
        const refused = await client
          .call('session.create', { cwd: tempDir(), mcp_servers })
          .catch((e: unknown) => e);
        expect(refused).toMatchObject({ code: -32602, reason: 'invalid_params' });
        expect((refused as Error).message).toMatch(message);
      }
    },
    E2E_TIMEOUT_MS,
  );
});

async function approve(
  client: GatewayClient,
  session_id: string,
  request: SessionEventBody,
  choice: string,
): Promise<void> {
  await client.call('approval.respond', {
    session_id,
    prompt_id: request['prompt_id'],
    execution_generation: request['execution_generation'],
    choice,
  });
}
