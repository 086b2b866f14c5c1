/**
 * The values of a session's own MCP servers (docs/decisions.md "Session MCP server values in memory
 * only"): what the policy stores (names, never values), what the creation digest covers, how held
 * values are put back or a server is left waiting, and what session.mcp.supply accepts.
 */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../../src/domain/errors.js';
import { createSessionParams } from '../../../src/domain/local/launch-params.js';
import {
  creationDigest,
  freezeLaunchPolicy,
  type LaunchDefaults,
} from '../../../src/domain/local/launch-policy.js';
import { heldBytes, McpValueStore, supplyMcpValues } from '../../../src/domain/local/mcp-values.js';
import { MCP_SERVERS_SCHEMA } from '../../../src/runtime/mcp/config.js';
import { resolveOwn } from '../../../src/runtime/mcp/values.js';
import { emptyLookups } from '../../fixtures/launch-fixtures.js';

const SECRET = 'sk-unit-sentinel';
const defaults: LaunchDefaults = {
  cwd: '/home/me',
  model: 'gatehouse-demo',
  toolsets: [],
  knownToolsets: [],
  maxTurns: 50,
  providers: {
    defaultProvider: 'default',
    names: ['default'],
    defaultModel: (name) => `${name}-model`,
    acceptsReasoning: () => true,
  },
  offerSkills: false,
};
const asked = {
  mcp_servers: {
    tool: { command: 'tool-mcp', env: { API_KEY: SECRET } },
    web: { url: 'https://mcp.example/mcp', headers: { Authorization: `Bearer ${SECRET}` } },
    plain: { command: 'plain-mcp' },
  },
};
const params = createSessionParams.parse(asked);
const policy = freezeLaunchPolicy(params, defaults, emptyLookups({ isDirectory: () => true }));
const own = policy.mcp_servers!.own;
const given = MCP_SERVERS_SCHEMA.parse(asked.mcp_servers);

describe("a session's own MCP server values", () => {
  it('are never in the frozen policy: the names are', () => {
    expect(JSON.stringify(policy)).not.toContain(SECRET);
    expect(own['tool']).toMatchObject({ command: 'tool-mcp', env: { API_KEY: '' } });
    expect(own['web']).toMatchObject({ headers: { Authorization: '' } });
  });

  it('do not count in the creation digest; their names do', () => {
    const other = createSessionParams.parse({
      mcp_servers: { ...asked.mcp_servers, tool: { command: 'tool-mcp', env: { API_KEY: 'another' } } },
    });
    expect(creationDigest(other)).toBe(creationDigest(params));
    const renamed = createSessionParams.parse({
      mcp_servers: { ...asked.mcp_servers, tool: { command: 'tool-mcp', env: { OTHER: SECRET } } },
    });
    expect(creationDigest(renamed)).not.toBe(creationDigest(params));
  });

  it('are put back from memory; a server that names some and has none held waits, one that names none runs', () => {
    expect(resolveOwn(own, undefined)).toEqual({ own: { plain: own['plain'] }, unsupplied: ['tool', 'web'] });
    const store = new McpValueStore();
    store.hold('s1', { tool: { API_KEY: SECRET } });
    const resolved = resolveOwn(own, store.get('s1'));
    expect(resolved.unsupplied).toEqual(['web']);
    expect(resolved.own['tool']).toMatchObject({ env: { API_KEY: SECRET } });
    // A fork keeps what its source holds, for the servers it has.
    store.copy('s1', 's2', { tool: own['tool']! });
    expect(store.get('s2')).toEqual({ tool: { API_KEY: SECRET } });
  });

  it('are supplied only for the servers the session was created with, all or none', () => {
    const store = new McpValueStore();
    const refused = (servers: unknown) => {
      try {
        supplyMcpValues(store, 's1', own, MCP_SERVERS_SCHEMA.parse(servers));
      } catch (error) {
        return error;
      }
      return null;
    };
    for (const wrong of [
      { stranger: { command: 'tool-mcp' } },
      { tool: { command: 'other-mcp', env: { API_KEY: SECRET } } },
      { tool: { command: 'tool-mcp', env: { RENAMED: SECRET } } },
      { web: { url: 'https://mcp.example/mcp', headers: {} } },
      { ...asked.mcp_servers, stranger: { command: 'x' } },
    ]) {
      const error = refused(wrong);
      expect(error).toBeInstanceOf(GatewayError);
      expect((error as GatewayError).reason).toBe('mcp_servers_mismatch');
    }
    expect(store.get('s1')).toBeUndefined();
    expect(supplyMcpValues(store, 's1', own, { web: given['web']! })).toEqual({
      session_id: 's1',
      supplied: ['web'],
      unsupplied: ['tool'],
    });
    expect(supplyMcpValues(store, 's1', own, given).unsupplied).toEqual([]);
    expect(resolveOwn(own, store.get('s1')).own).toEqual(given);
  });
});

describe('the bytes of MCP server values held', () => {
  const limits = { sessionBytes: 100, totalBytes: 150 };
  const limitOf = (hold: () => void): unknown => {
    try {
      hold();
    } catch (error) {
      return error instanceof GatewayError ? [error.reason, error.details?.['limit']] : error;
    }
    return null;
  };

  it('count each name and value in UTF-8', () => {
    expect(heldBytes({ a: { KEY: 'é' }, b: { H: 'xy' } })).toBe(3 + 2 + 1 + 2);
    expect(heldBytes(undefined)).toBe(0);
  });

  it("refuse past a session's limit, holding nothing; a replaced server's values are counted once", () => {
    const store = new McpValueStore(limits);
    expect(limitOf(() => store.hold('s1', { tool: { K: 'v'.repeat(100) } }))).toEqual([
      'invalid_params',
      'mcp_values_max_bytes',
    ]);
    expect(store.get('s1')).toBeUndefined();
    expect(store.totalBytes).toBe(0);
    store.hold('s1', { tool: { K: 'v'.repeat(59) } });
    store.hold('s1', { tool: { K: 'v'.repeat(69) } });
    expect(store.totalBytes).toBe(70);
    // The session's servers together: one more server past the limit is refused, the rest kept.
    expect(limitOf(() => store.hold('s1', { web: { H: 'h'.repeat(30) } }))).toEqual([
      'invalid_params',
      'mcp_values_max_bytes',
    ]);
    expect(store.get('s1')).toEqual({ tool: { K: 'v'.repeat(69) } });
  });

  it('refuse past the total of all sessions; a forgotten session makes room', () => {
    const store = new McpValueStore(limits);
    store.hold('s1', { tool: { K: 'v'.repeat(79) } });
    expect(limitOf(() => store.copy('s1', 's2', { tool: own['tool']! }))).toEqual([
      'invalid_params',
      'mcp_values_total_max_bytes',
    ]);
    expect(store.get('s2')).toBeUndefined();
    store.forget('s1');
    expect(store.totalBytes).toBe(0);
    store.hold('s2', { tool: { K: 'v'.repeat(79) } });
    expect(store.totalBytes).toBe(80);
  });
});
