import { describe, expect, it } from 'vitest';
import { configuredProviders, defaultProvider } from '../../../src/daemon/config-providers.js';
import { describeModel, parseConfig } from '../../../src/daemon/config.js';
import { configSecrets, maskConfig } from '../../../src/daemon/config-secrets.js';
import { DaemonError } from '../../../src/daemon/errors.js';
import { ProviderTable } from '../../../src/daemon/services/providers.js';
import { DEFAULT_CONTEXT_WINDOW } from '../../../src/runtime/context/windows.js';
import type { LaunchPolicy } from '../../../src/domain/local/launch-policy.js';

const FILE = '/home/me/.gatehouse/config.yaml';

function refused(text: string): string {
  try {
    parseConfig(text, FILE);
  } catch (error) {
    expect(error).toBeInstanceOf(DaemonError);
    return (error as DaemonError).message;
  }
  throw new Error('expected the config to be refused');
}

const TWO = `
providers:
  openai:
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_API_KEY
    models: [gpt-4o-mini, gpt-4.1]
  local:
    base_url: http://127.0.0.1:8080/v1
    context_window: 8192
    reasoning_format: none
    models:
      qwen-coder: {context_window: 32768}
      tiny: null
default_provider: local
`;

function policy(fields: Partial<LaunchPolicy>): LaunchPolicy {
  return { model: 'x', provider: null, base_url: null, ...fields } as LaunchPolicy;
}

describe('providers in config.yaml', () => {
  it('parses named providers, both forms of models, and the default', () => {
    const { config } = parseConfig(TWO, FILE);
    const list = configuredProviders(config);
    expect(list.map((p) => p.name)).toEqual(['openai', 'local']);
    expect(list[0]!.models).toEqual([
      { name: 'gpt-4o-mini', context_window: undefined },
      { name: 'gpt-4.1', context_window: undefined },
    ]);
    expect(list[0]!.reasoning_format).toBe('reasoning_effort');
    expect(list[1]!.models).toEqual([
      { name: 'qwen-coder', context_window: 32768 },
      { name: 'tiny', context_window: undefined },
    ]);
    expect(defaultProvider(config)?.name).toBe('local');
    expect(describeModel(config)).toBe('qwen-coder at http://127.0.0.1:8080/v1');
  });

  it('the model: block stays valid as the provider named default', () => {
    const { config } = parseConfig(
      'model: {base_url: https://x.example/v1, model: m-1, context_window: 4096}',
      FILE,
    );
    expect(defaultProvider(config)).toMatchObject({
      name: 'default',
      models: [{ name: 'm-1', context_window: 4096 }],
    });
  });

  it('refuses an unknown default_provider, a clash with the model: block, and empty models', () => {
    expect(refused(`${TWO.replace('default_provider: local', 'default_provider: nope')}`)).toBe(
      `${FILE}: default_provider: "nope" is not a configured provider (configured: openai, local) (see docs/configuration.md)`,
    );
    expect(
      refused(
        'model: {base_url: https://x.example/v1, model: m}\nproviders: {default: {base_url: https://y.example/v1, models: [a]}}',
      ),
    ).toContain('providers.default: "default" is the name of the model: block\'s provider');
    expect(refused('providers: {p: {base_url: https://y.example/v1, models: []}}')).toContain(
      'providers.p.models',
    );
    expect(refused('providers: {p: {base_url: https://u:pw@y.example/v1, models: [a]}}')).toContain(
      'must not contain credentials',
    );
    expect(refused('providers: {p: {base_url: https://y.example/v1, models: [a], api_key: k}}')).toContain(
      'providers.p.api_key: unknown key',
    );
  });

  it('a provider key named by api_key_env is scrubbed from logs; masking has nothing inline to hide', () => {
    const { config } = parseConfig(TWO, FILE);
    expect(configSecrets(config, { OPENAI_API_KEY: 'sk-provider-key' })).toContain('sk-provider-key');
    expect(JSON.stringify(maskConfig(config))).not.toContain('sk-');
  });
});

describe('context windows (issue 11)', () => {
  const table = new ProviderTable(parseConfig(TWO, FILE).config, {}, null);

  it("a model's own window, else its provider's, else a known family's, else the default", () => {
    expect(table.contextWindow(policy({ provider: 'local', model: 'qwen-coder' }))).toBe(32768);
    expect(table.contextWindow(policy({ provider: 'local', model: 'tiny' }))).toBe(8192);
    expect(table.contextWindow(policy({ provider: 'openai', model: 'gpt-4.1' }))).toBe(1_047_576);
    expect(table.contextWindow(policy({ provider: 'openai', model: 'unheard-of' }))).toBe(
      DEFAULT_CONTEXT_WINDOW,
    );
    // A session with its own base_url has no configured provider: the family table.
    expect(table.contextWindow(policy({ base_url: 'https://z.example/v1', model: 'gpt-4o' }))).toBe(128_000);
  });

  it('the demo model, when nothing is configured, has its configured window', () => {
    const demo = new ProviderTable(
      parseConfig('demo_model: {context_window: 4096}', FILE).config,
      {},
      'http://127.0.0.1:1/v1',
    );
    expect(demo.names).toEqual(['demo']);
    expect(demo.contextWindow(policy({ model: 'gatehouse-demo' }))).toBe(4096);
    expect(demo.describe()).toEqual([
      { name: 'demo', default: true, models: ['gatehouse-demo'], any_model: true, demo: true },
    ]);
  });

  it('names the default provider and which take a reasoning effort', () => {
    expect(table.defaultProvider).toBe('local');
    expect(table.acceptsReasoning('openai')).toBe(true);
    expect(table.acceptsReasoning('local')).toBe(false);
    expect(table.defaultModel('openai')).toBe('gpt-4o-mini');
  });

  it('a session whose provider left the configuration fails its turn with provider_unavailable', async () => {
    const model = table.model(policy({ provider: 'gone' }), undefined);
    await expect(model.complete({ messages: [] })).rejects.toMatchObject({ kind: 'provider_unavailable' });
  });
});
