/**
 * A session's own MCP servers' env and header values never reach the disk (docs/decisions.md
 * "Session MCP server values in memory only"), through the real daemon and real servers on both
 * stores: a session whose own stdio server has a secret in its env and whose own Streamable HTTP
 * server has one in a header runs tools through both (and a delegation's child through its parent's
 * server; a job's launch refuses values); the secret is then nowhere in the home (the
 * SQLite file, its WAL, the daemon log, anything) nor in any PostgreSQL row. After a restart the
 * servers are not started without their values and say why, a wrong supply is refused, and
 * session.mcp.supply brings them back.
 */
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import type { GatewayClient } from '../../src/surfaces/client/rpc-client.js';
import { inSchema } from '../shared/postgres.js';
import { testSchemaOf, type RunningDaemon } from './gateway-harness.js';
import { chatRequests, createAttached, tempDir, toolNames } from './seed-fixture.js';
import {
  describeEachStore,
  EVERYTHING,
  filesHolding,
  outcomeOf,
  pidsWith,
  startHttpEverything,
  toolResultOf,
  tracked,
  turnEvents,
  useMcpFixture,
} from './mcp-fixture.js';

const fx = useMcpFixture();
const E2E_TIMEOUT_MS = 180_000;
const SECRET = `sk-sentinel-${process.pid}-wombat`;

/** Every table of the home's PostgreSQL schema with a row whose text holds `needle`. */
async function rowsHolding(home: string, needle: string): Promise<string[]> {
  const schema = testSchemaOf(home);
  if (!schema) return [];
  return inSchema(schema.name, async (c) => {
    const tables = await c.query<{ t: string }>(
      `SELECT table_name AS t FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`,
      [schema.name],
    );
    const found: string[] = [];
    for (const { t } of tables.rows) {
      const hit = await c.query(`SELECT 1 FROM "${t}" r WHERE r::text LIKE $1 LIMIT 1`, [`%${needle}%`]);
      if ((hit.rowCount ?? 0) > 0) found.push(t);
    }
    return found;
  });
}

/** The environment a live process was started with. */
function environOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
}

/** Reads the delegation until it ended (there is no event across processes for it). */
async function delegationEnded(
  client: GatewayClient,
  id: string,
): Promise<{ state: string; outcome: string | null; child_session_id: string | null }> {
  for (;;) {
    const { delegations } = await client.call<{
      delegations: {
        delegation_id: string;
        state: string;
        outcome: string | null;
        child_session_id: string | null;
      }[];
    }>('delegation.list', {});
    const found = delegations.find((d) => d.delegation_id === id)!;
    if (found.state === 'reported' || found.state === 'failed' || found.state === 'stopped') return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function lastToolResult(client: GatewayClient, sessionId: string): Promise<string> {
  const { messages } = await client.call<{ messages: { role: string; content: string }[] }>(
    'session.history',
    {
      session_id: sessionId,
    },
  );
  return messages.filter((m) => m.role === 'tool').at(-1)!.content;
}

async function expectNowhere(d: RunningDaemon): Promise<void> {
  expect(filesHolding(d.home, SECRET)).toEqual([]);
  expect(await rowsHolding(d.home, SECRET)).toEqual([]);
}

describeEachStore(fx, "a session's own MCP server values on %s", () => {
  it(
    'are used, never stored or logged; after a restart the servers wait for them, and session.mcp.supply brings them back',
    async () => {
      const mark = tracked();
      const { url } = await startHttpEverything();
      const servers = {
        keyed: {
          command: process.execPath,
          args: [EVERYTHING, 'stdio', mark],
          env: { GH_TEST_API_KEY: SECRET },
          tools: { include: ['echo'] },
        },
        remote: { url, headers: { Authorization: `Bearer ${SECRET}` }, tools: { include: ['echo'] } },
      };
      let d = await fx.daemon();
      let client: GatewayClient = await d.connect();
      const launch = { cwd: tempDir(), request_id: 'with-secrets', mcp_servers: servers };
      const session = await createAttached(client, launch);

      const stdio = await turnEvents(client, session, 'v1', 'call: keyed__echo {"message": "via stdio"}');
      expect(toolResultOf(stdio)).toMatchObject({ content: 'Echo: via stdio', is_error: false });
      // The server was given the value itself.
      const [pid] = pidsWith(mark);
      expect(environOf(pid!)).toContain(`GH_TEST_API_KEY=${SECRET}`);
      const http = await turnEvents(client, session, 'v2', 'call: remote__echo {"message": "via http"}');
      expect(toolResultOf(http)).toMatchObject({ content: 'Echo: via http', is_error: false });

      // What the gateway tells of the session names the servers, never the values.
      const info = await client.call<{ mcp_servers: unknown }>('session.info', { session_id: session });
      expect(info.mcp_servers).toEqual({ profile: [], own: ['keyed', 'remote'] });
      const told = [
        info,
        await client.call('session.resume', { session_id: session }),
        await client.call('session.list', {}),
        await client.call('session.history', { session_id: session }),
      ];
      expect(JSON.stringify(told)).not.toContain(SECRET);

      // A delegation's child has its parent's servers, with the values the parent holds in memory.
      const started = await client.call<{ delegation: { delegation_id: string } }>('delegation.start', {
        session_id: session,
        request_id: 'child',
        task: 'call: keyed__echo {"message": "in the child"}',
        mcp_servers: ['keyed'],
      });
      const child = await delegationEnded(client, started.delegation.delegation_id);
      expect(child.outcome).toBe('completed');
      expect(await lastToolResult(client, child.child_session_id!)).toBe('Echo: in the child');

      // A job's launch is stored and runs unattended: values are refused there, not stored.
      const job = await client
        .call('jobs.add', {
          request_id: 'job-with-secret',
          every_s: 3600,
          new_session: { cwd: launch.cwd, mcp_servers: { keyed: servers.keyed } },
          text: 'hello',
        })
        .catch((e: unknown) => e);
      expect(job).toMatchObject({ reason: 'invalid_params', details: { field: 'new_session.mcp_servers' } });

      expect(await d.stop()).toBe(0);
      await expectNowhere(d);

      // Restarted: the values were in memory only. The servers are not started without them, and say why.
      fx.forget(d);
      d = await fx.daemon({ home: d.home });
      client = await d.connect();
      await client.call('session.resume', { session_id: session });
      const waiting = await turnEvents(client, session, 'v3', 'call: keyed__unavailable');
      expect(outcomeOf(waiting)).toBe('completed');
      const offered = toolNames(chatRequests(fx.demo).at(-1)!).filter((n) => n.includes('__'));
      expect(offered.sort()).toEqual(['keyed__unavailable', 'remote__unavailable']);
      expect(toolResultOf(waiting)).toMatchObject({ is_error: true });
      expect(toolResultOf(waiting).content).toMatch(
        /held only in the gateway's memory.*session\.mcp\.supply/,
      );
      expect(pidsWith(mark)).toEqual([]);

      // A server that is not the session's own as created is refused, and nothing is held.
      for (const wrong of [
        { keyed: { ...servers.keyed, args: [EVERYTHING, 'stdio', 'other'] } },
        { keyed: { ...servers.keyed, env: { OTHER_NAME: SECRET } } },
        { stranger: servers.keyed },
      ]) {
        const refused = await client
          .call('session.mcp.supply', { session_id: session, mcp_servers: wrong })
          .catch((e: unknown) => e);
        expect(refused).toMatchObject({ code: -32028, reason: 'mcp_servers_mismatch' });
      }
      const supplied = await client.call('session.mcp.supply', {
        session_id: session,
        mcp_servers: { remote: servers.remote },
      });
      expect(supplied).toEqual({ session_id: session, supplied: ['remote'], unsupplied: ['keyed'] });
      // Repeating session.create with its request_id gives them back too (its digest never held them).
      const repeated = await client.call<{ session_id: string }>('session.create', launch);
      expect(repeated.session_id).toBe(session);

      const again = await turnEvents(
        client,
        session,
        'v4',
        'call: keyed__echo {"message": "supplied again"}',
      );
      expect(toolResultOf(again)).toMatchObject({ content: 'Echo: supplied again', is_error: false });
      expect(environOf(pidsWith(mark)[0]!)).toContain(`GH_TEST_API_KEY=${SECRET}`);
      const remote = await turnEvents(
        client,
        session,
        'v5',
        'call: remote__echo {"message": "header again"}',
      );
      expect(toolResultOf(remote)).toMatchObject({ content: 'Echo: header again', is_error: false });

      expect(await d.stop()).toBe(0);
      await expectNowhere(d);
    },
    E2E_TIMEOUT_MS,
  );
});
