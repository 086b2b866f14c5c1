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
import { McpValueStore, supplyMcpValues } from '../../../src/domain/local/mcp-values.js';
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
