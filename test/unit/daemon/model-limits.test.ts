/**
 * Issue 12 item 11: `model.timeout_s` and `model.max_retries` reach the model client, are checked
 * with the key named, and the example in docs/configuration.md is valid as written.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { modelClientLimits } from '../../../src/daemon/config-schema.js';
import { parseConfig } from '../../../src/daemon/config.js';
import { DaemonError } from '../../../src/daemon/errors.js';

const FILE = '/home/me/.gatehouse/config.yaml';
const model = (extra: string) => `model: {base_url: "https://x.test/v1", model: m${extra}}`;

describe('issue 12 item 11: model timeouts and retries are configurable', () => {
  it('defaults to 60 s and 3 retries, with or without a model section', () => {
    const { config } = parseConfig(model(''), FILE);
    expect(config.model).toMatchObject({ timeout_s: 60, max_retries: 3 });
    const limits = { firstByteTimeoutMs: 60_000, idleTimeoutMs: 60_000, retry: { maxRetries: 3 } };
    expect(modelClientLimits(config.model)).toEqual(limits);
    expect(modelClientLimits(undefined)).toEqual(limits);
  });

  it('maps the keys onto the client', () => {
    const { config } = parseConfig(model(', timeout_s: 5, max_retries: 0'), FILE);
    expect(modelClientLimits(config.model)).toEqual({
      firstByteTimeoutMs: 5_000,
      idleTimeoutMs: 5_000,
      retry: { maxRetries: 0 },
    });
  });

  it.each([
    [', timeout_s: 0', 'model.timeout_s'],
    [', timeout_s: 1.5', 'model.timeout_s'],
    [', timeout_s: soon', 'model.timeout_s'],
    [', max_retries: -1', 'model.max_retries'],
    [', max_retries: 11', 'model.max_retries'],
    [', max_retries: 2.5', 'model.max_retries'],
  ])('refuses %s naming %s', (extra, key) => {
    let error: unknown;
    try {
      parseConfig(model(extra), FILE);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(DaemonError);
    expect((error as DaemonError).message).toContain(key);
    expect((error as DaemonError).message).toContain(FILE);
  });

  it('the example in docs/configuration.md parses as written', () => {
    const doc = readFileSync(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
    const example = /```yaml\n([\s\S]*?)```/.exec(doc)![1]!;
    const { config } = parseConfig(example, FILE);
    expect(config.model).toMatchObject({ timeout_s: 60, max_retries: 3 });
  });
});
