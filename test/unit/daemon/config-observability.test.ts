/**
 * Issue 29: the `metrics` and `pricing` sections: the examples docs/observability.md and docs/cost.md
 * show parse, and a malformed key is refused naming it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/daemon/config.js';
import { configSecrets } from '../../../src/daemon/config-secrets.js';

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
    ['pricing: {p: {m: {input_per_mtok: 1}}}', 'output_per_mtok'],
    ['pricing: {p: {m: {input_per_mtok: 1, output_per_mtok: 1, per_call: 2}}}', 'per_call'],
  ])('%s', (yaml, message) => {
    expect(() => parseConfig(yaml, FILE)).toThrow(message);
  });

  it("the scrape key's value is a secret the logs scrub", () => {
    const { config } = parseConfig('metrics: {enabled: true, bearer_key_env: GH_SCRAPE}', FILE);
    expect(configSecrets(config, { GH_SCRAPE: 'the-scrape-key-value' })).toContain('the-scrape-key-value');
  });

  it('defaults: metrics off, no prices of its own', () => {
    const { config } = parseConfig('', FILE);
    expect(config.metrics).toEqual({ enabled: false });
    expect(config.pricing).toEqual({});
  });
});
