/**
 * Issue 27: `mcp_servers` in config.yaml and in `session.create`. The profile's servers are frozen by
 * name, a session's own in full; leaving out a server the profile lacks, a bad name or a malformed
 * server is refused naming the field, and a config error names the key's path.
 */
import { describe, expect, it } from 'vitest';
import { createSessionParams, LaunchPolicyError } from '../../../src/domain/local/launch-params.js';
import { freezeLaunchPolicy, type LaunchDefaults } from '../../../src/domain/local/launch-policy.js';
import { parseConfig } from '../../../src/daemon/config.js';
import { DaemonError } from '../../../src/daemon/errors.js';
import { emptyLookups } from '../../fixtures/launch-fixtures.js';

const defaults: LaunchDefaults = {
  cwd: '/home/me',
  model: 'gatehouse-demo',
  toolsets: ['terminal', 'clarify'],
  knownToolsets: ['terminal', 'clarify'],
  maxTurns: 50,
  providers: {
    defaultProvider: 'default',
    names: ['default'],
    defaultModel: (name) => `${name}-model`,
    acceptsReasoning: () => true,
  },
  offerSkills: false,
  mcpServers: ['everything', 'notes'],
};
const lookups = emptyLookups({ isDirectory: (p) => p === '/home/me' });

function freeze(params: unknown) {
  return freezeLaunchPolicy(createSessionParams.parse(params), defaults, lookups);
}

describe('session.create mcp_servers', () => {
  it('freezes the profile servers by name and a session server in full, with its defaults', () => {
    expect(freeze({}).mcp_servers).toEqual({ profile: ['everything', 'notes'], own: {} });
    const policy = freeze({ mcp_servers: { notes: { enabled: false }, db: { command: 'db-mcp' } } });
    expect(policy.mcp_servers).toEqual({
      profile: ['everything'],
      own: {
        db: {
          command: 'db-mcp',
          args: [],
          env: {},
          enabled: true,
          tools: { exclude: [], approval: {} },
          timeout_s: 60,
          approval: 'detect',
        },
      },
    });
    // A session server of a profile server's name replaces it.
    expect(
      freeze({ mcp_servers: { notes: { url: 'https://example.com/mcp' } } }).mcp_servers?.profile,
    ).toEqual(['everything']);
  });

  it('refuses leaving out a server the profile lacks, bad names and malformed servers', () => {
    expect(() => freeze({ mcp_servers: { nothere: { enabled: false } } })).toThrow(LaunchPolicyError);
    for (const bad of [
      { a__b: { command: 'x' } },
      { Upper: { command: 'x' } },
      { both: { command: 'x', url: 'http://127.0.0.1/mcp' } },
      { ftp: { url: 'ftp://example.com/mcp' } },
      { slow: { command: 'x', timeout_s: 0 } },
      { asks: { command: 'x', approval: 'sometimes' } },
      { rel: { command: 'x', cwd: 'relative/dir' } },
      { own: { command: 'x', env: { GATEHOUSE_HOME: '/x' } } },
    ]) {
      expect(createSessionParams.safeParse({ mcp_servers: bad }).success, JSON.stringify(bad)).toBe(false);
    }
  });
});

describe('config.yaml mcp_servers', () => {
  it('takes stdio and HTTP servers and refuses an unknown key with its path', () => {
    const { config } = parseConfig(
      'mcp_servers:\n  fs:\n    command: mcp-server-filesystem\n    args: [/tmp]\n  web:\n    url: https://example.com/mcp\n    headers: {Authorization: Bearer x}\n',
      '/h/config.yaml',
    );
    expect(Object.keys(config.mcp_servers)).toEqual(['fs', 'web']);
    expect(() =>
      parseConfig('mcp_servers:\n  fs:\n    command: x\n    shell: true\n', '/h/config.yaml'),
    ).toThrow(DaemonError);
    const badName = () => parseConfig('mcp_servers:\n  fs__x:\n    command: x\n', '/h/config.yaml');
    expect(badName).toThrow('mcp_servers.fs__x');
    expect(badName).toThrow('is not a server name');
  });
});
