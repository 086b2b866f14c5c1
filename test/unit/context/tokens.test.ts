import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { countTextTokens } from '../../../src/runtime/context/tokens.js';

const require = createRequire(import.meta.url);
const encoding = require('gpt-tokenizer/encoding/cl100k_base') as { countTokens(t: string): number };
const whole = (text: string): number => encoding.countTokens(text);

describe('countTextTokens on long texts', () => {
  it('counts prose in pieces cut at whitespace exactly as the whole text would be', () => {
    const prose = 'The gateway keeps every session durable, and nothing runs twice. '.repeat(400);
    expect(prose.length).toBeGreaterThan(20_000);
    expect(countTextTokens(prose)).toBe(whole(prose));
  });

  it('counts a 400,000-character run with no whitespace in pieces (a whole-text BPE takes minutes)', () => {
    // 'x' encodes as one token per 8 characters, and 2,048 is a multiple of 8: the pieces add up.
    expect(countTextTokens('x'.repeat(400_000))).toBe(50_000);
    // A piece cut inside a word may cost a token more, never fewer than the whole text.
    const mixed = 'abcdefghij'.repeat(50_000);
    const count = countTextTokens(mixed);
    expect(count).toBeGreaterThanOrEqual(whole(mixed.slice(0, 20_000)) * 25);
    expect(count).toBeLessThanOrEqual(whole(mixed.slice(0, 20_000)) * 25 * 1.01 + 300);
  });
});
