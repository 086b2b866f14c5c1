/**
 * Issue 27: the `api_server` section. Off unless configured; a partial section is refused naming
 * what is missing; a key's variable unset, short or shared with another key stops the start; the
 * keys are scrubbed from logs like every secret.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { configSecrets } from '../../../src/daemon/config-secrets.js';
import { apiServerGrants } from '../../../src/daemon/services/api-server-setup.js';

const FILE = '/home/me/.gatehouse/config.yaml';
const KEYED = `api_server:
  keys:
    laptop: {key_env: API_LAPTOP, scopes: [session:create, session:read, session:submit]}
    ci: {key_env: API_CI, scopes: [session:read, session:submit]}
`;

function refusal(yaml: string): string {
  try {
    parseConfig(yaml, FILE);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('api_server', () => {
  it('is off when absent or disabled', () => {
    expect(apiServerGrants(parseConfig('', FILE).config, {})).toBeNull();
    expect(apiServerGrants(parseConfig('api_server: {enabled: false}', FILE).config, {})).toBeNull();
  });

  it('binds each key, read from its variable, to its own scopes', () => {
    const env = { API_LAPTOP: 'sk-laptop-0123456789', API_CI: 'sk-ci-0123456789abcd' };
    const { config } = parseConfig(KEYED, FILE);
    expect(apiServerGrants(config, env)).toEqual([
      { name: 'laptop', key: env.API_LAPTOP, scopes: ['session:create', 'session:read', 'session:submit'] },
      { name: 'ci', key: env.API_CI, scopes: ['session:read', 'session:submit'] },
    ]);
    expect(configSecrets(config, env)).toEqual(expect.arrayContaining([env.API_LAPTOP, env.API_CI]));
    expect(config.api_server?.approval_wait_s).toBe(300);
  });

  it.each([
    ['api_server: {}', 'api_server.keys: names no key'],
    ['api_server: {keys: {}}', 'api_server.keys: names no key'],
    ['api_server: {keys: {a: {scopes: [session:read]}}}', 'api_server.keys.a.key_env'],
    ['api_server: {keys: {a: {key_env: K}}}', 'api_server.keys.a.scopes'],
    ['api_server: {keys: {a: {key_env: K, scopes: []}}}', 'must name at least one capability'],
    ['api_server: {keys: {a: {key_env: K, scopes: [admin]}}}', 'must be capability names'],
    ['api_server: {keys: {"a b": {key_env: K, scopes: [session:read]}}}', 'key names must be'],
    ['api_server: {keys: {a: {key_env: K, scopes: [session:read], key: x}}}', 'key'],
    ['api_server: {port: 8080, keys: {a: {key_env: K, scopes: [session:read]}}}', 'port'],
    ['api_server: {approval_wait_s: -1, keys: {a: {key_env: K, scopes: [session:read]}}}', 'approval_wait_s'],
  ])('refuses %s', (yaml, expected) => {
    expect(refusal(yaml)).toContain(expected);
  });

  it('refuses to start with a key unset, short, or the same as another', () => {
    const { config } = parseConfig(KEYED, FILE);
    expect(() => apiServerGrants(config, { API_CI: 'sk-ci-0123456789abcd' })).toThrow(
      'api_server.keys.laptop.key_env names $API_LAPTOP, which is not set',
    );
    expect(() => apiServerGrants(config, { API_LAPTOP: 'short', API_CI: 'sk-ci-0123456789abcd' })).toThrow(
      'shorter than 16 characters',
    );
    const same = 'sk-same-0123456789abcd';
    expect(() => apiServerGrants(config, { API_LAPTOP: same, API_CI: same })).toThrow(
      'api_server.keys.ci and api_server.keys.laptop hold the same key',
    );
  });
});
