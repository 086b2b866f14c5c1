/**
 * Issue 29: the `metrics`, `telemetry` and `pricing` sections: the examples docs/observability.md and docs/cost.md
 * show parse, and a malformed key is refused naming it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { configSecrets } from '../../../src/daemon/config-secrets.js';
import { openTracing } from '../../../src/daemon/services/tracing-setup.js';

const FILE = '/home/me/.gatehouse/config.yaml';

function examples(doc: string, first: RegExp): string[] {
  const text = readFileSync(new URL(`../../../docs/${doc}`, import.meta.url), 'utf8');
  return [...text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!).filter((yaml) => first.test(yaml));
}

describe('the documented examples', () => {
  it('docs/observability.md: metrics', () => {
    const [metrics] = examples('observability.md', /^metrics:/m);
    expect(parseConfig(metrics!, FILE).config.metrics).toEqual({ enabled: true });
  });

  it('docs/observability.md: telemetry', () => {
    const [telemetry] = examples('observability.md', /^telemetry:/m);
    expect(parseConfig(telemetry!, FILE).config.telemetry).toEqual({
      otlp_endpoint: 'http://127.0.0.1:4318',
      headers_env: { Authorization: 'GATEHOUSE_OTLP_AUTH' },
      capture_content: false,
    });
  });

  it('docs/cost.md: providers with their prices', () => {
    const [pricing] = examples('cost.md', /^pricing:/m);
    const { config } = parseConfig(pricing!, FILE);
    expect(config.pricing['openrouter']?.['meta-llama/llama-3.3-70b-instruct']).toEqual({
      input_per_mtok: 0.13,
      output_per_mtok: 0.4,
    });
    expect(config.pricing['default']?.['my-finetune']?.cached_input_per_mtok).toBe(1.5);
  });
});

describe('refused with the key named', () => {
  it.each([
    ['metrics: {enabled: yes please}', 'metrics.enabled must be true or false'],
    ['metrics: {enabled: true, bearer_key_env: "not a name"}', 'must be the NAME of an environment variable'],
    ['metrics: {enabled: true, port: 9100}', 'port'],
    ['pricing: {p: {m: {input_per_mtok: -1, output_per_mtok: 1}}}', 'input_per_mtok must be 0 or more'],
    ['telemetry: {otlp_endpoint: "collector:4318"}', 'telemetry.otlp_endpoint must use http or https'],
    ['telemetry: {otlp_endpoint: "not a url"}', 'telemetry.otlp_endpoint must be an absolute URL'],
    ['telemetry: {otlp_endpoint: "grpc://127.0.0.1:4317"}', 'telemetry.otlp_endpoint must use http or https'],
    [
      'telemetry: {otlp_endpoint: "https://u:p@collector"}',
      'telemetry.otlp_endpoint must not carry credentials',
    ],
    ['telemetry: {otlp_endpoint: "https://collector?k=v"}', 'telemetry.otlp_endpoint must not have a query'],
    ['telemetry: {otlp_endpoint: 4318}', 'telemetry.otlp_endpoint must be a URL'],
    [
      'telemetry: {capture_content: true}',
      'telemetry.capture_content has no effect without telemetry.otlp_endpoint',
    ],
    [
      'telemetry: {headers_env: {Authorization: KEY}}',
      'telemetry.headers_env has no effect without telemetry.otlp_endpoint',
    ],
    [
      'telemetry: {otlp_endpoint: "http://c", headers_env: {"bad header": KEY}}',
      '"bad header" is not an HTTP header name',
    ],
    [
      'telemetry: {otlp_endpoint: "http://c", headers_env: {Authorization: "Bearer x"}}',
      'must be the NAME of an environment variable',
    ],
    [
      'telemetry: {otlp_endpoint: "http://c", capture_content: "yes"}',
      'telemetry.capture_content must be true or false',
    ],
    ['telemetry: {otlp_endpoint: "http://c", sample_ratio: 0.5}', 'sample_ratio'],
    ['pricing: {p: {m: {input_per_mtok: 1}}}', 'output_per_mtok'],
    ['pricing: {p: {m: {input_per_mtok: 1, output_per_mtok: 1, per_call: 2}}}', 'per_call'],
  ])('%s', (yaml, message) => {
    expect(() => parseConfig(yaml, FILE)).toThrow(message);
  });

  it("the scrape key's value is a secret the logs scrub", () => {
    const { config } = parseConfig('metrics: {enabled: true, bearer_key_env: GH_SCRAPE}', FILE);
    expect(configSecrets(config, { GH_SCRAPE: 'the-scrape-key-value' })).toContain('the-scrape-key-value');
  });

  it("the collector's header values are secrets the logs scrub", () => {
    const { config } = parseConfig(
      'telemetry: {otlp_endpoint: "http://c", headers_env: {X-Key: GH_OTLP}}',
      FILE,
    );
    expect(configSecrets(config, { GH_OTLP: 'the-collector-key' })).toContain('the-collector-key');
  });

  it('a header whose variable is not set stops the start, naming it; nothing is loaded without an endpoint', async () => {
    const { config } = parseConfig(
      'telemetry: {otlp_endpoint: "http://127.0.0.1:4318", headers_env: {Authorization: GH_OTLP_UNSET}}',
      FILE,
    );
    const service = { version: 'test', instanceId: 'test' };
    await expect(openTracing(config, {}, service)).rejects.toThrow(
      'telemetry.headers_env.Authorization names $GH_OTLP_UNSET, which is not set',
    );
    await expect(openTracing(config, { GH_OTLP_UNSET: '' }, service)).rejects.toThrow('which is not set');
    await expect(openTracing(parseConfig('', FILE).config, {}, service)).resolves.toBeNull();
  });

  it('defaults: metrics off, no prices of its own, no traces', () => {
    const { config } = parseConfig('', FILE);
    expect(config.telemetry).toEqual({ headers_env: {}, capture_content: false });
    expect(config.metrics).toEqual({ enabled: false });
    expect(config.pricing).toEqual({});
  });
});
