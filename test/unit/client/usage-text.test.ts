import { describe, expect, it } from 'vitest';
import {
  contextText,
  costText,
  tokenCountsText,
  tokensText,
  type ContextView,
} from '../../../src/surfaces/client/usage-text.js';

const grouped = (n: number): string => n.toLocaleString('en-US');

describe('costText', () => {
  it('says each status in its own words, to four decimals', () => {
    expect(costText({ usd: 0.0123, status: 'reported' })).toBe('$0.0123');
    expect(costText({ usd: 0.01234567, status: 'estimated' })).toBe('~$0.0123 (estimated)');
    expect(costText({ usd: 0.5, status: 'unknown' })).toBe('$0.5000+ (some calls unpriced)');
  });
  it('says cost unknown where no call was priced, or there is no figure', () => {
    expect(costText({ usd: 0, status: 'unknown' })).toBe('cost unknown');
    expect(costText(undefined)).toBe('cost unknown');
    expect(costText(null)).toBe('cost unknown');
  });
  it('says a zero that is known as a zero', () => {
    expect(costText({ usd: 0, status: 'reported' })).toBe('$0.0000');
    expect(costText({ usd: 0, status: 'estimated' })).toBe('~$0.0000 (estimated)');
  });
});

describe('tokensText', () => {
  const tokens = { total: 5210, input: 4800, cache_read: 0, output: 410 };
  it('gives the total and its parts, plain digits by default (the terminal)', () => {
    expect(tokensText(tokens)).toBe('5210 tokens (4800 in, 0 cached, 410 out)');
    expect(tokenCountsText({ input: 1290, cache_read: 12, output: 75 })).toBe('1290 in, 12 cached, 75 out');
  });
  it("writes each number the surface's way (the browser groups them)", () => {
    expect(tokensText(tokens, grouped)).toBe('5,210 tokens (4,800 in, 0 cached, 410 out)');
  });
});

describe('contextText', () => {
  const base: ContextView = {
    window: 128000,
    threshold: 0.75,
    compress_at: 96000,
    tokens: 1365,
    used: 1365 / 128000,
    until_compression: 94635,
    compression_due: false,
  };
  it('says how full the window is and how far compression is', () => {
    expect(contextText(base)).toBe(
      '1365 of 128000 tokens (1%) · compression at 96000 (75%): 94635 tokens to go',
    );
    expect(contextText(base, grouped)).toBe(
      '1,365 of 128,000 tokens (1%) · compression at 96,000 (75%): 94,635 tokens to go',
    );
  });
  it('says the next turn compresses first once past the threshold', () => {
    const due: ContextView = {
      window: 6000,
      threshold: 0.5,
      compress_at: 3000,
      tokens: 4337,
      used: 4337 / 6000,
      until_compression: 0,
      compression_due: true,
    };
    expect(contextText(due, grouped)).toBe(
      '4,337 of 6,000 tokens (72%) · past compression at 3,000 (50%): the next turn compresses first',
    );
  });
});
